// RelayHTTP: see README and DESIGN.
