"""The dashboard's own words in each ``bot.language``: its pages, notices and script.

One frozen mapping per language, keyed by name, each text a ``str.format`` template, as
:mod:`bot.texts` keeps the bot's: ``tests/test_web_words.py`` checks that both languages
name the same words with the same fields. A trace is shown in :mod:`bot.texts`' words,
as ``/trace`` shows it; the words its README section names (``answered``, ``sent``,
``json``…) stay as they are in every language, so they can be looked up.
"""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType

from adapters.web import config_words
from bot.texts import Language

HTML_LANG: Mapping[Language, str] = MappingProxyType({"en": "en", "zh": "zh-CN"})
"""What ``<html lang>`` says for each ``bot.language`` (a CJK font is chosen by it)."""

EN: Mapping[str, str] = MappingProxyType(
    {
        **config_words.EN,
        # every page
        "nav_overview": "Overview",
        "nav_chats": "Chats",
        "nav_log": "Log",
        "log_out": "Log out",
        "footer": "Times in {zone}.",
        "login_title": "Log in",
        "login_token": "Dashboard token",
        "login_button": "Log in",
        "login_failed": "That is not the token.",
        "login_hint": "The token is the value of the environment variable that [web] "
        "token_env names.",
        "phase_idle": "idle",
        "phase_waiting": "waiting",
        "phase_thinking": "thinking",
        "phase_sending": "sending",
        "no_prices": "no prices set",
        "none": "none",
        # the overview
        "platforms": "Platforms",
        "platform_up": "connected",
        "platform_down": "not connected",
        "platform_unknown": "unknown",
        "waiting_messages": "Messages waiting",
        "queued_replies": "Replies queued",
        "llm_errors": "LLM errors, last hour",
        "sent_today": "Sent today: texts · reactions · stickers · voice",
        "llm_today": "LLM today",
        "tokens": "tokens",
        "caps": "caps a day: soft {soft}, hard {hard}",
        "cap_reached": "{cap} (reached)",
        "hard_cap": "Hard cap reached: the bot stays silent, no LLM call until {until}.",
        "chart_title": "The last {days} days",
        "chart_by_cost": "cost in {currency}, chat days",
        "chart_by_tokens": "tokens (set prices in [budget] to see cost), chat days",
        "chart_label": "{what} per chat day, the last {days} days",
        "chart_cost": "cost",
        "chart_bar": "{day}: {tokens} tokens, {cost}",
        "chart_empty": "No LLM call in these days.",
        "plugins": "nonebot plugins",
        "plugins_hint": "on QQ, beside pacebot",
        "plugin_no_matchers": "no matchers",
        "plugin_left_out": "left out: {problem}",
        "recent_chats": "Chats",
        "recent_chats_hint": "the {shown} most recently active, live",
        "live_every": "Updated every 1.5 s.",
        "live_at": "Live: updated {time}.",
        "live_logged_out": "Logged out: log in again to see live updates.",
        "live_unreachable": "Cannot reach pacebot; retrying.",
        "column_chat": "Chat",
        "column_state": "State",
        "column_messages": "Messages",
        "column_last": "Last message",
        "no_chat_yet": "No chat has written yet.",
        # the chat list
        "chats_search": "a group's title, a chat key or a sender's name",
        "chats_search_label": "Search chats",
        "search": "Search",
        "no_chat_matches": "No chat matches.",
        # one chat: at a glance
        "glance": "At a glance",
        "reply_mode": "Reply mode",
        "reply_private": "a private chat: every batch is answered",
        "reply_mention": "mention: only when addressed",
        "reply_always": "always: every batch",
        "reply_smart": "smart: addressed, or when the gate finds a reason",
        "interests": "Interests",
        "override": "Override",
        "override_yes": "[[groups.override]] sets this group",
        "override_no": "none: [groups] applies",
        "unaddressed": "Unaddressed calls, this hour",
        "unaddressed_count": "{calls} of {budget}",
        "profile": "Profile",
        "profile_base": "the base configuration",
        "access": "The bot here",
        "access_on": "on",
        "access_off": "off: {why}",
        # one chat: recent messages
        "messages": "Recent messages",
        "messages_hint": "newest first",
        "no_message": "No message stored.",
        "voice": "voice",
        # one chat: the prompt stack
        "stack": "Prompt stack",
        "stack_tokens": "~{tokens} tokens in the prompt",
        "pop": "Pop the newest",
        "restore": "Restore the last pop",
        "restore_title": "brings back the summary of {day}",
        "stack_entry": "{count} messages · ~{tokens} tokens",
        "recall_only": "recall only",
        "partial": "partial: written before the day ended",
        "initial_persona": "Initial persona",
        "confirm_pop": "Pop the summary of {day}? The prompt no longer holds it; Restore "
        "brings it back.",
        # one chat: people
        "people": "People",
        "people_hint": "what the prompt knows about them, from this chat only",
        "person_meta": "id {id} · {count} fact(s)",
        "forget_person": "Forget this person",
        "forget": "Forget",
        "forget_label": "Forget fact {id}",
        "no_fact": "No fact about anyone here yet: the nightly summary learns them.",
        "confirm_forget": "Forget “{fact}” about {name}?",
        "confirm_forget_person": "Forget every fact about {name} here? Nothing they wrote up "
        "to today will be learned.",
        # one chat: stickers
        "stickers": "Stickers",
        "stickers_hint": "the collection the prompt offers, the most sent first",
        "sticker_meta": "sent {times}× · seen {when}",
        "banned": "banned",
        "ban": "Ban",
        "ban_label": "Ban sticker {label}",
        "no_sticker": "No sticker collected yet: the ones people send here join it.",
        # one chat: initiative
        "initiative": "Initiative",
        "initiative_hint": "what the bot will do here on its own",
        "quiet_until": "quiet until {until}",
        "pending": "Pending",
        "due": "due {when}",
        "for_whom": "for {name}",
        "cancel": "Cancel",
        "cancel_label": "Cancel later item {id}",
        "nothing_pending": "Nothing pending: no reminder or follow-up is planned here.",
        "openers": "Openers sent",
        "opener_meta": "batch {batch} · {outcome}",
        "no_opener": "No opener yet.",
        "quiet_periods": "Quiet periods",
        "quiet_by": "by {who}",
        "quiet_ended_by": "ended by {who}",
        "never_quiet": "Never quieted.",
        # one chat: traces
        "traces": "Traces",
        "traces_hint": "how the newest batches were answered, newest first, as /trace shows them",
        "no_trace": "No batch of this chat has a trace yet.",
        # what a change did
        "popped": "Popped the summary of {day} (audited as {who}). Restore undoes it.",
        "restored": "Restored the summary of {day}.",
        "nothing_to_pop": "Nothing to pop: only the initial persona is left.",
        "nothing_to_restore": "Nothing to restore: nothing was popped, or a newer summary "
        "came since.",
        "forgot_fact": "Forgot “{fact}” about {name} (audited as {who}). It no longer "
        "reaches the prompt.",
        "forgot_person": "Forgot {count} fact(s) about {name} here (audited as {who}); nothing "
        "they wrote up to today will be learned.",
        "forgot_person_none": "Nothing was remembered about {name} here; nothing they wrote "
        "up to today will be learned.",
        "nothing_to_forget": "Nothing to forget: it was forgotten already.",
        "unknown_person": "That person never wrote here: nothing was done.",
        "banned_sticker": "Banned the sticker {label} (audited as {who}): it is never "
        "offered, sent or collected again.",
        "nothing_to_ban": "Nothing to ban: that sticker is banned already or left the collection.",
        "cancelled_later": "Cancelled #{id}, {note} (audited as {who}): it will not run.",
        "nothing_to_cancel": "Nothing to cancel: it ran already, or was cancelled.",
        # the log
        "log": "Log",
        "log_hint": "the last {count} lines of {name}",
        "log_lines": "Lines",
        "log_level": "Level",
        "log_all_levels": "every level",
        "log_search": "words in the line",
        "log_show": "Show",
        "log_empty": "The log is empty.",
        "log_no_match": "No line of these matches.",
        # one chat: the access switch
        "switch_off": "Switch off here",
        "switch_on": "Switch on here",
        "confirm_switch_off": "Switch the bot off in this chat? Its messages are neither "
        "stored nor answered until it is switched on again.",
        "confirm_switch_on": "Switch the bot on in this chat? Its messages are stored and "
        "answered again.",
        "switched_off": "Switched off here (audited as {who}): messages here are neither "
        "stored nor answered.",
        "switched_on": "Switched on here (audited as {who}).",
        "access_by_config": "Still refused: {why}. No switch overrides the [access] rules of "
        "config.toml.",
        "access_rule": "Refused by config.toml: {why}. The switch cannot override the "
        "[access] rules.",
    }
)

ZH: Mapping[str, str] = MappingProxyType(
    {
        **config_words.ZH,
        "nav_overview": "概览",
        "nav_chats": "聊天",
        "nav_log": "日志",
        "log_out": "退出登录",
        "footer": "时间均为 {zone}。",
        "login_title": "登录",
        "login_token": "面板令牌",
        "login_button": "登录",
        "login_failed": "令牌不对。",
        "login_hint": "令牌是 [web] token_env 所指定的环境变量的值。",
        "phase_idle": "空闲",
        "phase_waiting": "等待中",
        "phase_thinking": "思考中",
        "phase_sending": "发送中",
        "no_prices": "未设置价格",
        "none": "无",
        "platforms": "平台",
        "platform_up": "已连接",
        "platform_down": "未连接",
        "platform_unknown": "未知",
        "waiting_messages": "等待中的消息",
        "queued_replies": "排队中的回复",
        "llm_errors": "最近一小时 LLM 出错",
        "sent_today": "今天发送：文字 · 表情回应 · 贴纸 · 语音",
        "llm_today": "今天的 LLM 用量",
        "tokens": "token",
        "caps": "每日上限：软上限 {soft}，硬上限 {hard}",
        "cap_reached": "{cap}（已达到）",
        "hard_cap": "已达到硬上限：机器人暂不回复，{until} 之前不再调用 LLM。",
        "chart_title": "最近 {days} 天",
        "chart_by_cost": "费用（{currency}），按聊天日",
        "chart_by_tokens": "token 数（在 [budget] 设置价格后显示费用），按聊天日",
        "chart_label": "最近 {days} 天每个聊天日的{what}",
        "chart_cost": "费用",
        "chart_bar": "{day}：{tokens} token，{cost}",
        "chart_empty": "这几天没有调用 LLM。",
        "plugins": "nonebot 插件",
        "plugins_hint": "在 QQ 上，与 pacebot 并行",
        "plugin_no_matchers": "没有响应器",
        "plugin_left_out": "未加载：{problem}",
        "recent_chats": "聊天",
        "recent_chats_hint": "最近活跃的 {shown} 个，实时更新",
        "live_every": "每 1.5 秒更新一次。",
        "live_at": "实时：{time} 更新。",
        "live_logged_out": "已退出登录：重新登录后才能实时更新。",
        "live_unreachable": "连不上 pacebot，正在重试。",
        "column_chat": "聊天",
        "column_state": "状态",
        "column_messages": "消息数",
        "column_last": "最后一条消息",
        "no_chat_yet": "还没有人发过消息。",
        "chats_search": "群名、聊天键或发送者的名字",
        "chats_search_label": "搜索聊天",
        "search": "搜索",
        "no_chat_matches": "没有匹配的聊天。",
        "glance": "概况",
        "reply_mode": "回复方式",
        "reply_private": "私聊：每一批都回复",
        "reply_mention": "mention：只在被叫到时回复",
        "reply_always": "always：每一批都回复",
        "reply_smart": "smart：被叫到时，或闸门找到理由时",
        "interests": "兴趣",
        "override": "单独设置",
        "override_yes": "本群有 [[groups.override]]",
        "override_no": "无：使用 [groups]",
        "unaddressed": "本小时未被叫到的调用",
        "unaddressed_count": "{calls} / {budget}",
        "profile": "配置档案",
        "profile_base": "基础配置",
        "access": "本聊天中的机器人",
        "access_on": "开启",
        "access_off": "关闭：{why}",
        "messages": "最近的消息",
        "messages_hint": "最新的在前",
        "no_message": "没有保存的消息。",
        "voice": "语音",
        "stack": "提示词栈",
        "stack_tokens": "提示词约 {tokens} token",
        "pop": "撤下最新的一条",
        "restore": "恢复上次撤下的",
        "restore_title": "恢复 {day} 的摘要",
        "stack_entry": "{count} 条消息 · 约 {tokens} token",
        "recall_only": "仅供回忆检索",
        "partial": "部分：写于当天结束前",
        "initial_persona": "初始人设",
        "confirm_pop": "撤下 {day} 的摘要？提示词将不再包含它；可以用“恢复”找回。",
        "people": "人物",
        "people_hint": "提示词对他们的了解，仅限本聊天",
        "person_meta": "id {id} · {count} 条事实",
        "forget_person": "忘记这个人",
        "forget": "忘记",
        "forget_label": "忘记事实 {id}",
        "no_fact": "这里还没有关于任何人的事实：夜间总结会学到。",
        "confirm_forget": "忘记关于 {name} 的“{fact}”？",
        "confirm_forget_person": "忘记这里关于 {name} 的所有事实？"
        "到今天为止他们写的内容都不会再被学习。",
        "stickers": "贴纸",
        "stickers_hint": "提示词提供的收藏，发送最多的在前",
        "sticker_meta": "发送 {times} 次 · 最近见到 {when}",
        "banned": "已禁用",
        "ban": "禁用",
        "ban_label": "禁用贴纸 {label}",
        "no_sticker": "还没有收藏贴纸：这里有人发的贴纸会加入收藏。",
        "initiative": "主动行为",
        "initiative_hint": "机器人会在这里主动做的事",
        "quiet_until": "安静到 {until}",
        "pending": "待办",
        "due": "{when} 到期",
        "for_whom": "给 {name}",
        "cancel": "取消",
        "cancel_label": "取消待办 {id}",
        "nothing_pending": "没有待办：这里没有安排提醒或回访。",
        "openers": "已发送的开场",
        "opener_meta": "第 {batch} 批 · {outcome}",
        "no_opener": "还没有开场。",
        "quiet_periods": "安静时段",
        "quiet_by": "由 {who} 设置",
        "quiet_ended_by": "由 {who} 结束",
        "never_quiet": "从未设为安静。",
        "traces": "处理记录",
        "traces_hint": "最新几批消息是怎么回复的，最新的在前，与 /trace 相同",
        "no_trace": "这个聊天还没有处理记录。",
        "popped": "已撤下 {day} 的摘要（记录为 {who}）。可以用“恢复”撤销。",
        "restored": "已恢复 {day} 的摘要。",
        "nothing_to_pop": "没有可撤下的：只剩初始人设了。",
        "nothing_to_restore": "没有可恢复的：没有撤下过，或之后又有了更新的摘要。",
        "forgot_fact": "已忘记关于 {name} 的“{fact}”（记录为 {who}），它不会再进入提示词。",
        "forgot_person": "已忘记这里关于 {name} 的 {count} 条事实（记录为 {who}）；"
        "到今天为止他们写的内容都不会再被学习。",
        "forgot_person_none": "这里没有记住关于 {name} 的事；"
        "到今天为止他们写的内容都不会再被学习。",
        "nothing_to_forget": "没有可忘记的：已经忘记了。",
        "unknown_person": "这个人从没在这里说过话：什么也没做。",
        "banned_sticker": "已禁用贴纸 {label}（记录为 {who}）：不会再提供、发送或收藏。",
        "nothing_to_ban": "没有可禁用的：这个贴纸已禁用或已不在收藏里。",
        "cancelled_later": "已取消 #{id}，{note}（记录为 {who}）：它不会执行。",
        "nothing_to_cancel": "没有可取消的：它已经执行过，或已被取消。",
        "log": "日志",
        "log_hint": "{name} 的最后 {count} 行",
        "log_lines": "行数",
        "log_level": "级别",
        "log_all_levels": "所有级别",
        "log_search": "行中的文字",
        "log_show": "显示",
        "log_empty": "日志是空的。",
        "log_no_match": "这些行中没有匹配的。",
        # 单个聊天：开关
        "switch_off": "在这里关闭",
        "switch_on": "在这里开启",
        "confirm_switch_off": "在这个聊天中关闭机器人？重新开启之前，这里的消息既不保存也不回复。",
        "confirm_switch_on": "在这个聊天中开启机器人？这里的消息会重新被保存和回复。",
        "switched_off": "已在这里关闭（审计记录为 {who}）：这里的消息既不保存也不回复。",
        "switched_on": "已在这里开启（审计记录为 {who}）。",
        "access_by_config": "仍被拒绝：{why}。开关无法越过 config.toml 的 [access] 规则。",
        "access_rule": "被 config.toml 拒绝：{why}。开关无法越过 [access] 规则。",
    }
)

WORDS: Mapping[Language, Mapping[str, str]] = MappingProxyType({"en": EN, "zh": ZH})
SCRIPT_WORDS = (
    "phase_idle",
    "phase_waiting",
    "phase_thinking",
    "phase_sending",
    "platform_up",
    "platform_down",
    "platform_unknown",
    "no_chat_yet",
    "live_at",
    "live_logged_out",
    "live_unreachable",
    "profile_base",
    "preview_tokens",
)
"""The words ``static/dashboard.js`` draws itself (its pages hand them over as data)."""


class Words:
    """The dashboard's words in one language: ``words("popped", day=…, who=…)``."""

    def __init__(self, language: Language) -> None:
        self.language = language
        self.html_lang = HTML_LANG[language]
        self._words = WORDS[language]

    def __call__(self, name: str, /, **fields: object) -> str:
        """Return the word ``name`` with ``fields`` filled in (never formatted again)."""
        return self._words[name].format(**fields)

    def for_script(self) -> dict[str, str]:
        """Return the words the page's script draws, unfilled."""
        return {name: self._words[name] for name in SCRIPT_WORDS}
