import FuzzSupport

runLibFuzzer(fuzzHTTPRequest)
