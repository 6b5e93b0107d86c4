import FuzzSupport

runLibFuzzer(fuzzControlBodies)
