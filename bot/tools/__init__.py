"""The functions the model may call while it answers a batch, inside the call budget.

- :mod:`bot.tools.ports`: the :class:`~bot.tools.ports.Toolbox` the adapters fill (MCP
  servers, web search);
- :mod:`bot.tools.offer`: which tools a batch is offered, and how many rounds it may spend:
  only batches that address the bot, as ``[tools]`` and the chat's profile allow;
- :mod:`bot.tools.results`: one round of the model's calls, run at once, each under
  ``timeout_s``, its result fenced and capped as data;
- :mod:`bot.tools.loop`: the rounds: answer the calls, ask again, and after ``max_rounds``
  ask for the reply with the tools withheld.
"""
