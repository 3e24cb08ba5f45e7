"""Voice: hearing the voice notes people send, and answering with the bot's own voice.

A voice note is transcribed once, beside the debounce wait (:mod:`bot.voice.hearing`);
its transcript becomes the message's text, so prompts, history, summaries and recall read
it as words. A ``voice`` item of a reply plan is spoken by the speech endpoint just before
it is sent (:mod:`bot.voice.speaking`), or sent as text when it cannot be. The ports the
concept needs live in :mod:`bot.voice.ports`.
"""
