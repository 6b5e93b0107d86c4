import FuzzSupport

runLibFuzzer(fuzzOptions)
