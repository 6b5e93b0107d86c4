import FuzzSupport

runLibFuzzer(fuzzSTUN)
