import FuzzSupport

runLibFuzzer(fuzzTurnRequests)
