print("mediarelay-load: not yet")
