"""The self-improvement loop: strategies, their guards, the proposals and the rounds."""
