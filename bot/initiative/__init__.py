"""Initiative: the bot comes back later when it promised to, and now and then speaks first.

- ``promises.py`` reads a ``later`` item of a reply plan into a due time, or refuses it.
- ``openers.py`` decides when a quiet chat may be spoken to first, and whether it may now.
- ``occasion.py`` is what starts an initiative batch, and what its prompt says instead of
  new messages.
- ``wakeup.py`` keeps one timer for the next due moment across every chat.
- ``schedule.py`` (:class:`~bot.initiative.schedule.Initiative`) finds what is due and
  hands it to the pipeline, which answers it as one batch with one LLM call.
"""
