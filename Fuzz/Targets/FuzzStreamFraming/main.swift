import FuzzSupport

runLibFuzzer(fuzzStreamFraming)
