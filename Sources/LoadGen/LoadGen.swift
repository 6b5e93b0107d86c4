// LoadGen: see README and DESIGN.
