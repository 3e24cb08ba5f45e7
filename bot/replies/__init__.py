"""The replies a batch is answered with: the contract, reading it, and the fallbacks."""
