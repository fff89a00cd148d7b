"""A pull request's state in the broker, below both the agent (which reads its base and
writes its A/B record) and the notifier (which renders the comment from it)."""
