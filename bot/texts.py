"""What pacebot says in its own words, in each ``bot.language``.

Command answers, refusals and the console's own lines come from here; the persona
decides the language of the chat itself. One frozen mapping per language, keyed by
message name, each text a ``str.format`` template: adding a message is one line in
each language, and ``tests/test_texts.py`` checks that both name the same messages
with the same fields. Field values are never formatted again, so ``{`` or ``%`` in a
chatter's words cannot break a template.

A command's one-line description for ``/help`` and the Telegram menu is the message
``help_<command>``.
"""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType
from typing import Literal

Language = Literal["en", "zh"]

EN: Mapping[str, str] = MappingProxyType(
    {
        # who may do what
        "refusal": "Sorry, only admins can use that command.",
        "refusal_in_group": "In a group, only admins can use /{name}.",
        "help_header": "Commands you can use here:",
        # one line per command, for /help and the Telegram menu
        "help_help": "the commands you can use",
        "help_summary": "the memory summaries: list, show one, pop, restore, write one now",
        "help_pop": "remove the newest memory summary",
        "help_prompt": "show the effective system prompt",
        "help_recall": "show what memory recall finds for a question",
        "help_status": "pacing, waiting messages, queued replies, LLM errors, what today cost",
        "help_people": "the people of this chat with their fact counts",
        "help_facts": "one person's remembered facts, each with its id",
        "help_forget": "forget one fact by its id",
        "help_forgetme": "forget every fact about you in this chat",
        "help_trace": "how the bot answered a batch (1 = the newest)",
        "help_stickers": "the stickers this chat's collection holds",
        "help_sticker": "ban a sticker: never offered or sent again",
        "help_later": "the reminders and follow-ups pending here; cancel one by its id",
        "help_quiet": "no openers or follow-ups here for N hours (default 24); /quiet off",
        "help_bot": "stop serving this chat (nothing stored or answered), or start again",
        "help_tools": "the tools this chat is offered, and each tool server's state",
        "help_whoami": "your id here, as bot.admins names an admin",
        # /status
        "status": "chat: {chat}\n"
        "debounce: {debounce_min_s:g}–{debounce_max_s:g} s, max wait {max_wait_s:g} s, "
        "max batch {max_batch}\n"
        "reply delays: up to {max_delay_s:g} s\n"
        "on new message: {on_new_message}\n"
        "group reply mode: {reply_mode}\n"
        "waiting messages: {waiting}\n"
        "queued replies: {queued}\n"
        "sent today: {texts} text(s), {reactions} reaction(s), {stickers} sticker(s),"
        " {voices} voice message(s)\n"
        "LLM errors in the last hour: {errors}",
        "status_tokens": "LLM today: {chat_tokens:,} tokens here ({chat_cost}), "
        "{bot_tokens:,} in all ({bot_cost}){estimated}",
        "status_estimated": "; some counted offline",
        "status_caps": "budget a day: soft cap {soft}, hard cap {hard}, per chat {chat_cap}",
        "status_no_cap": "none",
        "status_cap_reached": "{cap:,} (reached)",
        "status_hard_cap": "hard cap reached: the bot stays silent, no LLM call until {until} "
        "(messages are kept)",
        "status_unaddressed": "unaddressed calls in the last hour: {calls} of {budget}",
        "status_paused": "paused for a bot loop until {until}: no LLM call here meanwhile",
        "status_profile": "profile: {profile}",
        "status_later": "later items pending: {count}; the next, a {kind}, at {due} (/later)",
        "status_quiet": "quiet until {until}: no openers or follow-ups here",
        # /prompt
        "prompt": "system prompt of {chat}, ~{tokens} tokens:\n\n{prompt}",
        # /summary
        "summary_usage": "usage: /summary list | show [N] | pop | restore | run [YYYY-MM-DD]",
        "summary_none": "{chat} has no summaries yet.",
        "summary_list_empty": "{chat} has no summaries yet: the prompt is the initial persona "
        "(~{tokens} tokens).",
        "summary_list_header": "memory of {chat}: {count} summaries, {kept} in the prompt "
        "(persona with summaries ~{tokens} tokens); newest first:",
        "summary_list_item": "{number}. {day} · {first_line} · ~{tokens} tok",
        "summary_list_recall_only": " (recall only)",
        "summary_list_partial": " (partial: the day had not ended)",
        "summary_list_more": "… and {count} older, back to {day} "
        "(/summary show N shows any of them)",
        "summary_show_usage": "usage: /summary show [N], N = 1 for the newest",
        "summary_show_range": "there are {count} summaries: choose N from 1 (newest) to {count}",
        "summary_show_head": "{day} ({count} messages)",
        "summary_show_key_points": "key points:",
        "summary_show_topics": "topics: {topics}",
        "summary_show_keywords": "keywords: {keywords}",
        "pop_nothing": "Nothing to pop: only the initial persona is left.",
        "pop_done": "Popped the summary of {day}. {count} summaries remain{newest}. "
        "/summary restore undoes this.",
        "pop_newest": ", the newest from {day}",
        "restore_nothing": "Nothing to restore: nothing was popped, or a newer summary was "
        "pushed since.",
        "restore_done": "Restored the summary of {day}.",
        "run_usage": "usage: /summary run [YYYY-MM-DD] (default: yesterday)",
        "run_future": "{day} has not happened yet.",
        "run_over_budget": "The summary of {day} waits: today's hard cap of [budget] is "
        "reached, so no LLM call is made until the next chat day.",
        "run_failed": "The summary of {day} failed (the LLM did not answer usably); "
        "try again later.",
        "run_already": "{day} already has a summary; /pop it first to write it again.",
        "run_nothing": "Nobody wrote in {chat} on {day}: nothing to summarise.",
        "run_done": "Summarised {day}; it is now the newest memory. /summary show to read it.",
        "run_done_partial": "Summarised {day} so far (partial: the day has not ended). Once "
        "it has, the nightly run summarises the whole day in its place.",
        # /recall
        "recall_usage": "usage: /recall <question>, e.g. /recall 昨天聊了什么",
        "recall_nothing": "Nothing recalled for that question{days}.",
        "recall_days": " (dates asked about: {days})",
        "recall_found": "Recalled by {how}:\n\n{records}",
        "recall_no_summary": "No summary is in the prompt yet.",
        "recall_already": "Already in the prompt, so not repeated: {days}. ",
        "recall_prompt_holds": "The prompt holds the summaries of {count} day(s): {span}.",
        # /people, /facts, /forget, /forgetme
        "people_usage": "usage: /people (in the chat, or naming a chat key from a private chat)",
        "people_none": "Nothing is remembered about anyone in {chat} yet.",
        "people_header": "people of {chat} with facts remembered ({count}), most facts first:",
        "people_item": "- {name} (id {user_id}): {count} fact(s)",
        "people_more": "… and {count} more",
        "people_footer": "/facts <user id> shows one person's facts.",
        "facts_usage": "usage: /facts <user id> (the platform id /people shows)",
        "facts_none": "Nothing is remembered about id {user_id} in {chat}.",
        "facts_header": "facts about {name} (id {user_id}) in {chat}, newest first:",
        "facts_item": "#{fact_id} · learned from {day} · {text}",
        "facts_footer": "/forget <fact id> removes one.",
        "forget_usage": "usage: /forget <fact id>, e.g. /forget 12 "
        "(/facts <user id> shows the ids)",
        "forget_unknown": "There is no fact #{fact_id} in {chat}: it was forgotten already, "
        "or never was here.",
        "forget_done": "Forgot fact #{fact_id} about {name} (id {user_id}): {text}",
        "forgetme_none": "Nothing is remembered about you in this chat, and nothing you wrote "
        "up to today will be.",
        "forgetme_done": "Forgot {count} fact(s) about you in this chat; nothing you wrote up to "
        "today will teach them again. Day summaries are kept (an admin can /pop them).",
        # /trace and `pacebot trace`; the words the README names (answered, sent, json…) stay
        "trace_usage": "usage: /trace [N], N = 1 for the newest batch, up to {keep}",
        "trace_none": "No batch of {chat} has a trace yet.",
        "trace_too_far": "{chat} has {kept} trace(s) kept: choose N from 1 (newest) to {kept}.",
        "trace_head": "batch {batch_id} of {chat}, {at}: {why}",
        "trace_messages": "messages: {ids}",
        "trace_sender": "{id} ({name})",
        "trace_rearmed": "re-armed the wait: {rearmed}; joined as context: {context}",
        "trace_wait_ended": "the wait ended: {why}",
        "trace_prompt": "prompt ~{total} tokens: {parts}",
        "trace_recall": "recall ({how}): dates asked {asked}; date hits {date_hits}; "
        "keyword hits {keyword_hits}; vector hits {vector_hits}; already in the prompt {in_prompt}",
        "trace_fact_hits": "; fact hits {ids}",
        "trace_tool": "- tool {name} {arguments} → {result} · {outcome}, {duration_ms:.0f} ms,"
        " {chars} chars",
        "trace_nothing": "none",
        "trace_calls": "LLM calls:",
        "trace_no_calls": "LLM calls: none",
        "trace_call": "- {kind} · {model} · {latency_ms:.0f} ms · {end}{tokens}",
        "trace_call_finish": "finish {reason}",
        "trace_call_error": "error: {error}",
        "trace_call_tokens": ", tokens {prompt}→{completion}",
        "trace_call_tokens_estimated": ", tokens ~{prompt}→{completion} (not reported: "
        "counted offline)",
        "trace_call_no_tokens": ", tokens not reported",
        "trace_gate": "gate: {reasons}",
        "trace_cost": "tokens {total:,} (prompt {prompt:,}, completion {completion:,}){estimated}, "
        "{cost}",
        "trace_cost_amount": "cost {cost}",
        "no_prices": "no prices set",
        "trace_estimated": ", some counted offline",
        "trace_guard": "guard: {what}",
        "trace_tier": "replies read by: {tier}",
        "trace_fate": "reply {number}: {state} · {content}",
        "trace_dropped": "not sent: a {kind} item ({reason})",
        "trace_heard": "voice note #{id} heard: {transcript}",
        "trace_unheard": "voice note #{id} not heard: its placeholder was answered",
        "trace_note": "note: {note}",
        "trace_profile": "profile: {profile}",
        "trace_promised": "kept for later: {kind} at {due} · {note}",
        "trace_raw": "raw output:",
        # /stickers, /sticker ban
        "stickers_usage": "usage: /stickers (in the chat, or naming a chat key from a private "
        "chat)",
        "stickers_off": "Stickers are off: set [stickers] enabled = true to collect and send them.",
        "stickers_none": "{chat} has no stickers yet: they are kept as people send them.",
        "stickers_header": "stickers of {chat} ({count}), the most sent first:",
        "stickers_item": "{label} · {caption} · sent {sent}×",
        "stickers_banned": " (banned)",
        "sticker_usage": "usage: /sticker ban <id>, e.g. /sticker ban s7 (the ids /stickers shows)",
        "sticker_unknown": "There is no sticker {label} to ban in {chat}: it is unknown or "
        "banned already.",
        "sticker_banned": "Banned sticker {label} ({caption}): it is never offered, sent or "
        "kept again.",
        # /later, /quiet
        "later_usage": "usage: /later (what is pending here) | /later cancel <id>",
        "later_none": "Nothing is pending here: no reminder or follow-up is planned.",
        "later_header": "pending here ({count}), the soonest first:",
        "later_item": "#{id} · {due} · {kind} · {note}",
        "later_footer": "/later cancel <id> cancels one (the one who asked for it, or an admin).",
        "later_unknown": "There is no pending item #{id} here: it ran, was cancelled, or never "
        "was here.",
        "later_not_yours": "Only the one who asked for #{id}, or an admin, can cancel it.",
        "later_cancelled": "Cancelled #{id} ({kind}, {due}): {note}",
        "quiet_usage": "usage: /quiet [hours] (default 24, at most {most}) | /quiet off",
        "quiet_done": "Quiet until {until}: no openers or follow-ups here until then "
        "(reminders still come). /quiet off ends it sooner.",
        "quiet_off_done": "Quiet ended: the bot may speak first here again.",
        "quiet_off_none": "This chat is not quiet.",
        "bot_usage": "usage: /bot off | /bot on",
        "tools_off": "No tools here: {why}.",
        "tools_none": "No tool is offered here now.",
        "tools_offered": "Offered to messages that address the bot, for at most {rounds} extra"
        " call(s): {tools}",
        "tools_admins_only": "admins only",
        "tools_source": "- {name} ({kind}): {state}; offers {tools}{detail}",
        "bot_on_now": "The bot serves this chat (/bot off stops it).",
        "bot_off_done": "Switched off in {chat}: its messages are neither stored nor answered "
        "until an admin says /bot on.",
        "bot_on_done": "Switched on in {chat}: its messages are stored and answered again.",
        "bot_refused": "The bot does not serve this chat: {why}.",
        "whoami": 'You are {who} (to make you an admin: admins = ["{who}"] under [bot]).',
        # the console's own lines
        "console_banner": "pacebot console: you ({chat}, an admin) are chatting with {bot}; /help "
        "lists the commands. Ctrl-D: answer what is waiting and leave; Ctrl-C: leave now.",
        "console_waiting": "… ({bot} is waiting for you to finish)",
        "console_left_waiting": "{count} message(s) still waiting: {bot} answers them on the "
        "next start.",
        "console_no_dashboard": "[web] is enabled, but the console does not serve the "
        "dashboard: only `pacebot run` does, at {url}",
        "console_you": "you",
        "console_prompt": "you> ",
        "console_typing": "{bot} is typing…",
        "console_silent": "{bot} stays silent: today's hard cap of [budget] ({cap:,} tokens) "
        "is reached, so no LLM call is made until the next chat day begins at {until}. What "
        "you write is kept.",
    }
)

ZH: Mapping[str, str] = MappingProxyType(
    {
        "refusal": "抱歉，只有管理员可以使用这个命令。",
        "refusal_in_group": "在群里，只有管理员可以使用 /{name}。",
        "help_header": "你在这里可以用的命令：",
        "help_help": "列出你可以用的命令",
        "help_summary": "记忆摘要：列出、查看、撤下、恢复、立即生成",
        "help_pop": "撤下最新的一条记忆摘要",
        "help_prompt": "查看当前生效的系统提示词",
        "help_recall": "查看一个问题会唤起哪些记忆",
        "help_status": "节奏设置、等待中的消息、排队的回复、LLM 错误、今天的花费",
        "help_people": "这个聊天里的人，以及记住的关于每人的事实数",
        "help_facts": "记住的关于某个人的事实，每条带编号",
        "help_forget": "按编号忘掉一条事实",
        "help_forgetme": "忘掉这个聊天里关于你的所有事实",
        "help_trace": "机器人如何回答了一批消息（1 = 最新）",
        "help_stickers": "这个聊天收集到的表情包",
        "help_sticker": "禁用一个表情包：不再提供，也不再发送",
        "help_later": "这里待办的提醒和回访；按编号取消一个",
        "help_quiet": "N 小时内（默认 24）这里不主动开口、不回访；/quiet off 结束",
        "help_bot": "在这个聊天停用机器人（不存也不回），或重新启用",
        "help_tools": "这个聊天可用的工具，以及各个工具服务的状态",
        "help_whoami": "你在这里的 id，即 bot.admins 里写管理员的方式",
        "status": "会话：{chat}\n"
        "防抖：{debounce_min_s:g}–{debounce_max_s:g} 秒，最长等待 {max_wait_s:g} 秒，"
        "每批最多 {max_batch} 条\n"
        "回复间隔：最多 {max_delay_s:g} 秒\n"
        "有新消息时：{on_new_message}\n"
        "群聊回复模式：{reply_mode}\n"
        "等待中的消息：{waiting}\n"
        "排队的回复：{queued}\n"
        "今天发出：{texts} 条文字，{reactions} 个表情回应，{stickers} 个表情包，{voices} 条语音\n"
        "最近一小时 LLM 错误：{errors}",
        "status_tokens": "今天的 LLM 用量：这里 {chat_tokens:,} token（{chat_cost}），"
        "全部 {bot_tokens:,} token（{bot_cost}）{estimated}",
        "status_estimated": "；部分为离线估算",
        "status_caps": "每日预算：软上限 {soft}，硬上限 {hard}，每个会话 {chat_cap}",
        "status_no_cap": "无",
        "status_cap_reached": "{cap:,}（已达到）",
        "status_hard_cap": "已达到硬上限：机器人暂不回复，{until} 之前不再调用 LLM（消息都会保存）",
        "status_unaddressed": "最近一小时未被点名的调用：{calls} / {budget}",
        "status_paused": "发现机器人互相回复，暂停到 {until}：期间这里不调用 LLM",
        "status_profile": "配置方案：{profile}",
        "status_later": "待办的稍后事项：{count} 个；下一个（{kind}）在 {due}（/later）",
        "status_quiet": "安静到 {until}：期间这里不主动开口、不跟进",
        "prompt": "{chat} 的系统提示词，约 {tokens} token：\n\n{prompt}",
        "summary_usage": "用法：/summary list | show [N] | pop | restore | run [YYYY-MM-DD]",
        "summary_none": "{chat} 还没有摘要。",
        "summary_list_empty": "{chat} 还没有摘要：提示词就是初始人设（约 {tokens} token）。",
        "summary_list_header": "{chat} 的记忆：共 {count} 条摘要，{kept} 条在提示词里"
        "（人设加摘要约 {tokens} token）；从新到旧：",
        "summary_list_item": "{number}. {day} · {first_line} · 约 {tokens} token",
        "summary_list_recall_only": "（仅供回忆检索）",
        "summary_list_partial": "（部分：写于当天结束前）",
        "summary_list_more": "……还有 {count} 条更早的，最早到 {day}"
        "（/summary show N 可查看任意一条）",
        "summary_show_usage": "用法：/summary show [N]，N = 1 表示最新的一条",
        "summary_show_range": "共有 {count} 条摘要：N 请在 1（最新）到 {count} 之间选择",
        "summary_show_head": "{day}（{count} 条消息）",
        "summary_show_key_points": "要点：",
        "summary_show_topics": "话题：{topics}",
        "summary_show_keywords": "关键词：{keywords}",
        "pop_nothing": "没有可以撤下的：只剩初始人设了。",
        "pop_done": "已撤下 {day} 的摘要。还剩 {count} 条{newest}。/summary restore 可以撤销。",
        "pop_newest": "，最新的是 {day}",
        "restore_nothing": "没有可以恢复的：没有撤下过摘要，或者之后又有了更新的摘要。",
        "restore_done": "已恢复 {day} 的摘要。",
        "run_usage": "用法：/summary run [YYYY-MM-DD]（默认：昨天）",
        "run_future": "{day} 还没到。",
        "run_over_budget": "{day} 的摘要先等等：今天已达到 [budget] 的硬上限，"
        "下一个聊天日之前不再调用 LLM。",
        "run_failed": "{day} 的摘要失败了（LLM 没有给出可用的回答），请稍后再试。",
        "run_already": "{day} 已经有摘要了；要重写请先 /pop。",
        "run_nothing": "{day} 没有人在 {chat} 说话：没有可总结的。",
        "run_done": "已总结 {day}，现在它是最新的记忆。用 /summary show 查看。",
        "run_done_partial": "已总结 {day} 到目前为止的内容（部分：这一天还没结束）。"
        "这一天结束后，夜间任务会总结全天，替换这条摘要。",
        "recall_usage": "用法：/recall <问题>，例如 /recall 昨天聊了什么",
        "recall_nothing": "这个问题没有唤起任何记忆{days}。",
        "recall_days": "（问到的日期：{days}）",
        "recall_found": "唤起方式：{how}\n\n{records}",
        "recall_no_summary": "提示词里还没有摘要。",
        "recall_already": "已在提示词里，不再重复：{days}。",
        "recall_prompt_holds": "提示词里有 {count} 天的摘要：{span}。",
        "people_usage": "用法：/people（在聊天里直接用，或在私聊里带上聊天的键）",
        "people_none": "{chat} 里还没有记住关于任何人的事。",
        "people_header": "{chat} 里记住了 {count} 个人的事，按条数从多到少：",
        "people_item": "- {name}（ID {user_id}）：{count} 条",
        "people_more": "……还有 {count} 人",
        "people_footer": "/facts <用户 ID> 查看某个人的全部事实。",
        "facts_usage": "用法：/facts <用户 ID>（即 /people 显示的平台 ID）",
        "facts_none": "{chat} 里没有记住关于 ID {user_id} 的事。",
        "facts_header": "{chat} 里关于 {name}（ID {user_id}）的事实，从新到旧：",
        "facts_item": "#{fact_id} · 记于 {day} · {text}",
        "facts_footer": "/forget <事实编号> 可以删掉其中一条。",
        "forget_usage": "用法：/forget <事实编号>，例如 /forget 12（用 /facts <用户 ID> 查看编号）",
        "forget_unknown": "{chat} 里没有编号为 #{fact_id} 的事实："
        "可能已经删掉了，或者不属于这个聊天。",
        "forget_done": "已忘掉关于 {name}（ID {user_id}）的事实 #{fact_id}：{text}",
        "forgetme_none": "这个聊天里没有记住关于你的事，今天及以前你说过的话也不会被记下。",
        "forgetme_done": "已忘掉这个聊天里关于你的 {count} 条事实，今天及以前你说过的话不会再"
        "被记成事实；每日摘要仍会保留（管理员可以用 /pop 撤下）。",
        "trace_usage": "用法：/trace [N]，N = 1 表示最新的一批，最多 {keep}",
        "trace_none": "{chat} 还没有任何一批消息的处理记录。",
        "trace_too_far": "{chat} 保留了 {kept} 条处理记录：N 请在 1（最新）到 {kept} 之间选择。",
        "trace_head": "{chat} 的第 {batch_id} 批，{at}：{why}",
        "trace_messages": "消息：{ids}",
        "trace_sender": "{id}（{name}）",
        "trace_rearmed": "重新计时的消息：{rearmed}；只作为上下文的：{context}",
        "trace_wait_ended": "等待结束于：{why}",
        "trace_prompt": "提示词约 {total} token：{parts}",
        "trace_recall": "回忆（{how}）：问到的日期 {asked}；按日期找到 {date_hits}；"
        "按关键词找到 {keyword_hits}；按语义找到 {vector_hits}；已在提示词里 {in_prompt}",
        "trace_fact_hits": "；找到的事实 {ids}",
        "trace_tool": "- 工具 {name} {arguments} → {result} · {outcome}，{duration_ms:.0f} 毫秒，"
        "{chars} 字符",
        "trace_nothing": "无",
        "trace_calls": "LLM 调用：",
        "trace_no_calls": "LLM 调用：无",
        "trace_call": "- {kind} · {model} · {latency_ms:.0f} 毫秒 · {end}{tokens}",
        "trace_call_finish": "结束原因 {reason}",
        "trace_call_error": "出错：{error}",
        "trace_call_tokens": "，token {prompt}→{completion}",
        "trace_call_tokens_estimated": "，token 约 {prompt}→{completion}（服务商未报告：离线估算）",
        "trace_call_no_tokens": "，服务商未报告 token 数",
        "trace_gate": "闸门：{reasons}",
        "trace_cost": "token {total:,}（输入 {prompt:,}，输出 {completion:,}）{estimated}，{cost}",
        "trace_cost_amount": "费用 {cost}",
        "no_prices": "未设置价格",
        "trace_estimated": "，部分为离线估算",
        "trace_guard": "防护：{what}",
        "trace_tier": "回复解析方式：{tier}",
        "trace_fate": "第 {number} 条回复：{state} · {content}",
        "trace_dropped": "未发送：一个 {kind} 项（{reason}）",
        "trace_heard": "语音 #{id} 转写：{transcript}",
        "trace_unheard": "语音 #{id} 未能转写：按占位符回答",
        "trace_note": "备注：{note}",
        "trace_profile": "配置方案：{profile}",
        "trace_promised": "留待以后：{kind}，{due} · {note}",
        "trace_raw": "原始输出：",
        "stickers_usage": "用法：/stickers（在聊天里，或在私聊里指明一个会话）",
        "stickers_off": "表情包功能已关闭：设置 [stickers] enabled = true 才会收集和发送。",
        "stickers_none": "{chat} 还没有表情包：有人发了就会收起来。",
        "stickers_header": "{chat} 的表情包（{count} 个），发得最多的在前：",
        "stickers_item": "{label} · {caption} · 发过 {sent} 次",
        "stickers_banned": "（已禁用）",
        "sticker_usage": "用法：/sticker ban <编号>，例如 /sticker ban s7（/stickers 列出的编号）",
        "sticker_unknown": "{chat} 里没有可禁用的表情包 {label}：不存在，或已经禁用。",
        "sticker_banned": "已禁用表情包 {label}（{caption}）：不会再提供、发送或收集。",
        # /later, /quiet
        "later_usage": "用法：/later（这里待办的事）| /later cancel <编号>",
        "later_none": "这里没有待办：没有计划中的提醒或回访。",
        "later_header": "这里待办（{count} 条），最近的在前：",
        "later_item": "#{id} · {due} · {kind} · {note}",
        "later_footer": "/later cancel <编号> 取消一条（提出的人或管理员可以）。",
        "later_unknown": "这里没有待办 #{id}：已经执行、已被取消，或不在这里。",
        "later_not_yours": "只有提出 #{id} 的人或管理员可以取消它。",
        "later_cancelled": "已取消 #{id}（{kind}，{due}）：{note}",
        "quiet_usage": "用法：/quiet [小时]（默认 24，最多 {most}）| /quiet off",
        "quiet_done": "安静到 {until}：在那之前这里不主动开口、不回访（提醒照常）。"
        "/quiet off 可提前结束。",
        "quiet_off_done": "安静已结束：机器人可以在这里主动开口了。",
        "quiet_off_none": "这个聊天没有在安静中。",
        "bot_usage": "用法：/bot off | /bot on",
        "tools_off": "这里没有工具：{why}。",
        "tools_none": "这里现在没有可用的工具。",
        "tools_offered": "对找机器人说话的消息提供，最多多花 {rounds} 次调用：{tools}",
        "tools_admins_only": "仅管理员",
        "tools_source": "- {name}（{kind}）：{state}；提供 {tools}{detail}",
        "bot_on_now": "机器人在这个聊天里工作中（/bot off 停用）。",
        "bot_off_done": "已在 {chat} 停用：这里的消息不再保存、不再回复，直到管理员说 /bot on。",
        "bot_on_done": "已在 {chat} 重新启用：这里的消息会保存并回复。",
        "bot_refused": "机器人不为这个聊天服务：{why}。",
        "whoami": '你是 {who}（设为管理员：在 [bot] 下写 admins = ["{who}"]）。',
        "console_banner": "pacebot 控制台：你（{chat}，管理员）正在和 {bot} 聊天；/help "
        "列出命令。Ctrl-D：回复完等待中的消息后退出；Ctrl-C：立即退出。",
        "console_waiting": "……（{bot} 在等你说完）",
        "console_left_waiting": "还有 {count} 条消息在等待：{bot} 下次启动时会回复。",
        "console_no_dashboard": "[web] 已开启，但控制台不提供网页面板：只有 `pacebot run` 提供，"
        "地址是 {url}",
        "console_you": "你",
        "console_prompt": "你> ",
        "console_typing": "{bot} 正在输入…",
        "console_silent": "{bot} 暂不回复：今天已达到 [budget] 的硬上限（{cap:,} token），"
        "下一个聊天日 {until} 开始前不再调用 LLM。你说的话都会保存。",
    }
)

CATALOGUES: Mapping[Language, Mapping[str, str]] = MappingProxyType({"en": EN, "zh": ZH})


class Texts:
    """Say a named message in one language."""

    __slots__ = ("_catalogue", "language")

    def __init__(self, language: Language) -> None:
        self.language = language
        self._catalogue = CATALOGUES[language]

    def __call__(self, name: str, /, **fields: object) -> str:
        """Return message ``name`` with ``fields`` filled in."""
        return self._catalogue[name].format(**fields)
