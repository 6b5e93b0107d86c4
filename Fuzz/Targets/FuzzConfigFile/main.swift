import FuzzSupport

runLibFuzzer(fuzzConfigFile)
