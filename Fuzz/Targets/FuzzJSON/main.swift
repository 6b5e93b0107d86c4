import FuzzSupport

runLibFuzzer(fuzzJSON)
