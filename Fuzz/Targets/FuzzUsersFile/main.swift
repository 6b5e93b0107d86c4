import FuzzSupport

runLibFuzzer(fuzzUsersFile)
