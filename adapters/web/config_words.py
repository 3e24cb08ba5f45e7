"""The words of the pages that shape the bot, the settings and the personas, in each
``bot.language``; :mod:`adapters.web.words` holds them with the rest of the dashboard's."""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType

EN: Mapping[str, str] = MappingProxyType(
    {
        # the settings page
        "nav_settings": "Settings",
        "settings": "Settings",
        "settings_hint": "Every key of {path}, by table. Save writes only the keys you changed "
        "(comments kept, the old file backed up) and applies them at once; a key marked "
        "“needs a restart” applies at the next start.",
        "settings_read_only": "Read only: this bot runs from no config file, so its settings "
        "are shown here, not changed.",
        "settings_file_unread": "Read only for now: {path} does not load as it stands (see "
        "below); mend it in the file.",
        "settings_none": "No setting to show.",
        "settings_top": "Outside every table",
        "needs_restart": "needs a restart",
        "default_is": "default",
        "waits_for_restart": "The file's value waits for a restart; running now: {running}",
        "env_hint": "The name of an environment variable: the secret lives there, and is "
        "never shown or typed in here.",
        "shown_hint": "May hold a plugin's secret: edited in config.toml.",
        "toml_hint": 'As TOML: ["a", "b"], or {{ key = 1 }}.',
        "path_unset": "no file",
        "reset": "Reset to default",
        "confirm_reset": "Take {key} out of config.toml? It runs with its default, {default}.",
        "save": "Save",
        "save_hint": "only what changed is written",
        "settings_saved": "Saved {keys} (audited as {who}).",
        "settings_applied": "Applied now: {keys}.",
        "settings_restart": "Needs a restart: {keys}.",
        "settings_unchanged": "Nothing changed: every value is as the file has it.",
        "form_switch": "expected on or off",
        "form_integer": "expected a whole number, such as 3",
        "form_number": "expected a number, such as 2.5",
        "form_choice": "expected one of: {choices}",
        "form_toml": 'expected a TOML value, such as ["a", "b"] or {{ key = 1 }}: {problem}',
        # the personas page
        "nav_personas": "Personas",
        "personas": "Personas",
        "personas_hint": "The base persona, then each profile's in the order profiles are "
        "tried. Save writes config.toml (comments kept, the old file backed up); the next "
        "answer starts with it.",
        "personas_read_only": "Read only: this bot runs from no config file.",
        "persona_base": "Base persona",
        "persona_profile": "Profile {name}",
        "persona_chats": "chats: {chats}",
        "persona_file": "Read from {path}: edited in that file (a reload picks it up).",
        "persona_in_file": "This persona is read from {path}: edit it in that file.",
        "persona_inherits": "Empty: this profile runs with the base persona.",
        "persona_label": "Persona of {name}",
        "persona_blank": "The base persona cannot be empty.",
        "persona_unchanged": "Nothing changed: the persona is as the file has it.",
        "persona_saved": "Saved the persona of {name} (audited as {who}); the next answer "
        "starts with it.",
        "preview": "Preview",
        "preview_hint": "the system prompt a chat would get now",
        "preview_chat": "Chat",
        "preview_typed": "or a chat key: telegram:group:-100123",
        "preview_show": "Show",
        "preview_size": "Size",
        "preview_tokens": "~{tokens} tokens",
        "preview_no_chat": "No chat yet: type a chat key to see its prompt.",
    }
)

ZH: Mapping[str, str] = MappingProxyType(
    {
        # 设置页
        "nav_settings": "设置",
        "settings": "设置",
        "settings_hint": "{path} 的每一项，按表分组。保存只写入改动过的项（注释保留，旧文件"
        "另存备份），并立即生效；标着“需要重启”的项在下次启动时生效。",
        "settings_read_only": "只读：这个机器人不是从配置文件启动的，这里只显示设置，不能修改。",
        "settings_file_unread": "暂时只读：{path} 现在无法加载（原因见下），请在文件里修正。",
        "settings_none": "没有可显示的设置。",
        "settings_top": "不属于任何表",
        "needs_restart": "需要重启",
        "default_is": "默认",
        "waits_for_restart": "文件中的值要等重启后生效；当前运行的值：{running}",
        "env_hint": "这是环境变量的名字：密钥存放在那里，这里从不显示，也不能填写。",
        "shown_hint": "可能含有插件的密钥：请在 config.toml 中修改。",
        "toml_hint": '用 TOML 写：["a", "b"]，或 {{ key = 1 }}。',
        "path_unset": "无文件",
        "reset": "恢复默认",
        "confirm_reset": "把 {key} 从 config.toml 中移除？它将使用默认值 {default}。",
        "save": "保存",
        "save_hint": "只写入改动过的项",
        "settings_saved": "已保存 {keys}（审计记录为 {who}）。",
        "settings_applied": "已生效：{keys}。",
        "settings_restart": "需要重启：{keys}。",
        "settings_unchanged": "没有改动：每一项都和文件中的一样。",
        "form_switch": "应为开或关",
        "form_integer": "应为整数，例如 3",
        "form_number": "应为数字，例如 2.5",
        "form_choice": "应为以下之一：{choices}",
        "form_toml": '应为 TOML 值，例如 ["a", "b"] 或 {{ key = 1 }}：{problem}',
        # 人设页
        "nav_personas": "人设",
        "personas": "人设",
        "personas_hint": "基础人设，以及按匹配顺序排列的各档案的人设。保存会写入 config.toml"
        "（注释保留，旧文件另存备份）；下一次回答即用新人设。",
        "personas_read_only": "只读：这个机器人不是从配置文件启动的。",
        "persona_base": "基础人设",
        "persona_profile": "档案 {name}",
        "persona_chats": "聊天：{chats}",
        "persona_file": "读取自 {path}：请在该文件中修改（重新加载后生效）。",
        "persona_in_file": "这个人设读取自 {path}：请在该文件中修改。",
        "persona_inherits": "留空：这个档案使用基础人设。",
        "persona_label": "{name} 的人设",
        "persona_blank": "基础人设不能为空。",
        "persona_unchanged": "没有改动：人设和文件中的一样。",
        "persona_saved": "已保存 {name} 的人设（审计记录为 {who}）；下一次回答即用它。",
        "preview": "预览",
        "preview_hint": "某个聊天此刻会得到的系统提示词",
        "preview_chat": "聊天",
        "preview_typed": "或输入聊天键：telegram:group:-100123",
        "preview_show": "显示",
        "preview_size": "大小",
        "preview_tokens": "约 {tokens} 个 token",
        "preview_no_chat": "还没有聊天：输入一个聊天键来查看它的提示词。",
    }
)
