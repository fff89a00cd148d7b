"""The lab on one machine: its services started and stopped as one (``rbs lab up/down``),
a local stand-in of GitHub's comment API that records what would be posted, and the replay
of real pull requests as GitHub deliveries (``rbs lab replay``)."""
