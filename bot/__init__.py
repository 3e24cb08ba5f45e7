"""pacebot's core: a chatbot that waits, answers in paced messages and remembers."""
