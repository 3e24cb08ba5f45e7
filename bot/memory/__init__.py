"""What the bot remembers: day summaries on a poppable stack, people, recall, dates."""
