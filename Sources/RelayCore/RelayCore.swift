// RelayCore: see README and DESIGN.
