print("mediarelay: not yet")
