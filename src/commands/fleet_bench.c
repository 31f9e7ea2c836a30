/* sdcscan bench fleet: written in a later commit. */
