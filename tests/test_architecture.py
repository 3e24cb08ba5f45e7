"""The shape holds: what each package may import, how long a module may grow, what loads when.

bot/ imports nothing outside itself; among the adapters only the composition root
(``adapters/app.py``) reaches ``storage`` or ``scheduler``;
``storage`` and ``scheduler`` import no adapter; no module passes 500 lines; no two modules
import each other, however indirectly (an import under ``TYPE_CHECKING`` or inside a
function counts too), and none imports another's private name. A platform's libraries
load only when that platform is enabled. No test module imports another: what tests share
lives in ``fakes/``, ``tests/conftest.py`` or ``tests/log_capture.py``.
"""

from __future__ import annotations

import ast
import asyncio
import json
import subprocess
import sys
from pathlib import Path

import pytest

from fakes.mcp_server import WEATHER_CANARY
from fakes.openai_api import FakeLLMServer

ROOT = Path(__file__).resolve().parent.parent
CORE = ROOT / "bot"
OUTSIDE = ("adapters", "storage", "scheduler", "telegram", "openai", "aiosqlite", "nonebot")
PACKAGES = ("bot", "adapters", "storage", "scheduler")
COMPOSITION_ROOT = ROOT / "adapters" / "app.py"
MODULE_LINES_MAX = 500
PLATFORM_LIBRARIES = ("telegram", "nonebot", "fastapi", "uvicorn", "jinja2")
QQ_LIBRARIES = ("nonebot", "fastapi", "uvicorn")
WEB_LIBRARIES = ("fastapi", "uvicorn", "starlette", "jinja2", "multipart")
SHARED_TEST_MODULES = ("log_capture",)  # in tests/ and meant to be imported (conftest never is)


def imported_modules(path: Path) -> set[str]:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    names: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module:
            names.add(node.module)
    return names


def modules_of(*packages: str) -> list[Path]:
    return sorted(path for package in packages for path in (ROOT / package).rglob("*.py"))


def imports_from(path: Path, packages: tuple[str, ...]) -> list[str]:
    return sorted(m for m in imported_modules(path) if m.split(".")[0] in packages)


def loaded_after(code: str) -> list[str]:
    """Run ``code`` in a fresh interpreter; return the top-level modules it left loaded."""
    runner = f"""
import json, sys
{code}
print(json.dumps(sorted({{name.split(".")[0] for name in sys.modules}})))
"""
    done = subprocess.run(
        [sys.executable, "-c", runner],
        cwd=ROOT,
        input="",  # a console run reads this empty input and ends
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert (done.returncode, done.stderr[-2000:] if done.returncode else "") == (0, "")
    loaded: list[str] = json.loads(done.stdout.splitlines()[-1])
    return loaded


def relative(path: Path) -> str:
    return str(path.relative_to(ROOT))


def module_name(path: Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def import_graph() -> dict[str, set[str]]:
    """Map each module of the four packages to the modules of theirs it imports."""
    paths = {module_name(path): path for path in modules_of(*PACKAGES)}
    graph: dict[str, set[str]] = {name: set() for name in paths}
    for name, path in paths.items():
        package = name if path.name == "__init__.py" else name.rpartition(".")[0]
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            targets: list[str] = []
            if isinstance(node, ast.Import):
                targets = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom):
                base = package.split(".")[: len(package.split(".")) - node.level + 1]
                stem = ".".join([*base, node.module or ""]) if node.level else node.module or ""
                targets = [stem.strip(".")] + [f"{stem.strip('.')}.{a.name}" for a in node.names]
            for target in targets:
                while target and target not in paths:
                    target = target.rpartition(".")[0]
                # A package's __init__ is not an edge back from its own modules.
                if target and target != name and not name.startswith(target + "."):
                    graph[name].add(target)
    return graph


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Return the strongly connected components of more than one module (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    found: list[list[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        for other in graph[node]:
            if other not in index:
                visit(other)
                low[node] = min(low[node], low[other])
            elif other in stack:
                low[node] = min(low[node], index[other])
        if low[node] == index[node]:
            component = []
            while (member := stack.pop()) != node:
                component.append(member)
            component.append(node)
            if len(component) > 1:
                found.append(sorted(component))

    for node in sorted(graph):
        if node not in index:
            visit(node)
    return found


@pytest.mark.parametrize("path", modules_of("bot"), ids=relative)
def test_core_module_imports_only_the_core(path: Path) -> None:
    """Each bot/ module imports neither the outer packages nor a platform or LLM library."""
    leaks = sorted(m for m in imported_modules(path) if m.split(".")[0] in OUTSIDE)
    assert leaks == []


@pytest.mark.parametrize("path", modules_of("adapters"), ids=relative)
def test_only_the_composition_root_reaches_storage_and_scheduler(path: Path) -> None:
    """An adapter other than adapters/app.py (the CLI included) imports neither storage nor
    scheduler."""
    allowed = path == COMPOSITION_ROOT
    leaks = [] if allowed else imports_from(path, ("storage", "scheduler"))
    assert leaks == []


@pytest.mark.parametrize("path", modules_of("storage", "scheduler"), ids=relative)
def test_storage_and_scheduler_import_no_adapter(path: Path) -> None:
    """storage/ and scheduler/ depend on the core only, never on an adapter."""
    assert imports_from(path, ("adapters",)) == []


def test_no_import_cycle() -> None:
    """No module of the four packages can only be read together with another: the import
    graph, every import counted, has no cycle."""
    assert cycles(import_graph()) == []


def test_the_cycle_finder_finds_a_cycle() -> None:
    """The cycle check is not blind: a made-up graph with a loop is reported as one."""
    graph = {"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}
    assert cycles(graph) == [["a", "b", "c"]]


@pytest.mark.parametrize("path", modules_of(*PACKAGES), ids=relative)
def test_no_private_name_is_imported_from_another_module(path: Path) -> None:
    """A module imports only the public names of another (``_Call`` stays where it lives)."""
    private = [
        f"{node.module}.{alias.name}"
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8")))
        if isinstance(node, ast.ImportFrom)
        and node.module
        and node.module.split(".")[0] in PACKAGES
        for alias in node.names
        if alias.name.startswith("_")
    ]
    assert private == []


@pytest.mark.parametrize("path", modules_of(*PACKAGES), ids=relative)
def test_no_module_is_over_500_lines(path: Path) -> None:
    """Every module of the four packages stays within 500 lines."""
    lines = len(path.read_text(encoding="utf-8").splitlines())
    assert max(lines, MODULE_LINES_MAX) == MODULE_LINES_MAX


def imported_test_modules(source: str) -> list[str]:
    """Return the modules of tests/ that ``source`` (a module of tests/ or fakes/) imports,
    however it names them, leaving out the shared ones."""
    found: set[str] = set()
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.level:  # relative: inside tests/
            base = "tests." + node.module if node.module else "tests"
            names = [base] if node.module else [f"tests.{a.name}" for a in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module == "tests":
            names = [f"tests.{alias.name}" for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module:
            names = [node.module]
        else:
            names = []
        found.update(name for name in names if name.startswith("tests."))
    return sorted(name for name in found if name.split(".")[1] not in SHARED_TEST_MODULES)


@pytest.mark.parametrize("path", modules_of("tests", "fakes"), ids=relative)
def test_no_test_module_imports_another(path: Path) -> None:
    """A test module or a fake imports no test module: shared helpers live in fakes/."""
    assert imported_test_modules(path.read_text(encoding="utf-8")) == []


def test_the_test_import_check_sees_every_spelling() -> None:
    """The check is not blind: absolute, package and relative imports of a test module are
    found, and the shared log capture is let through."""
    source = (
        "import tests.test_a\n"
        "from tests.test_b import helper\n"
        "from tests import test_c, log_capture\n"
        "from .test_d import helper\n"
        "from . import test_e\n"
        "from tests.log_capture import captured_logs\n"
    )
    assert imported_test_modules(source) == [
        "tests.test_a",
        "tests.test_b",
        "tests.test_c",
        "tests.test_d",
        "tests.test_e",
    ]


@pytest.mark.parametrize("flag", ["--help", "--version"])
def test_help_and_version_load_only_the_command_line(flag: str) -> None:
    """``pacebot --help`` and ``--version`` load no pacebot module but the CLI, and none of
    pydantic, loguru, the LLM SDK or a platform library: they answer at once."""
    done = subprocess.run(
        [
            sys.executable,
            "-c",
            f"""
import json, sys
from adapters.cli import main
try:
    main([{flag!r}])
except SystemExit:
    pass
print(json.dumps(sorted(sys.modules)))
""",
        ],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )
    loaded: list[str] = json.loads(done.stdout.splitlines()[-1])
    heavy = ("pydantic", "loguru", "openai", "aiosqlite", *PLATFORM_LIBRARIES)
    ours = [name for name in loaded if name.split(".")[0] in PACKAGES]
    assert (ours, [name for name in heavy if name in loaded]) == (["adapters", "adapters.cli"], [])


def test_a_telegram_only_config_loads_no_qq_library(tmp_path: Path) -> None:
    """Building the platforms of a Telegram-only config loads no nonebot, FastAPI or uvicorn."""
    loaded = loaded_after(
        "from pathlib import Path\n"
        "from adapters.app import build_platforms, load_platform_modules\n"
        "from bot.config.model import parse_config\n"
        "from bot.secrets import Secrets\n"
        "config = parse_config({'telegram': {'enabled': True}}, base_dir=Path('.'))\n"
        "load_platform_modules(config)\n"
        "platforms = build_platforms(config, Secrets('k', 'k', telegram_token='1:x'))\n"
        "assert list(platforms) == ['telegram'], platforms\n"
    )
    assert ("telegram" in loaded, [name for name in QQ_LIBRARIES if name in loaded]) == (True, [])
    assert "cryptography" not in loaded  # PTB's Passport, unused, would hold ~10 MiB


def test_the_official_qq_bot_loads_no_signing_library() -> None:
    """The official QQ bot's module loads nonebot's QQ adapter without ``cryptography``
    (6 MiB, for webhook calls pacebot never serves), the adapter holding the stand-ins
    that refuse any use; ``cryptography`` imported after is the real one."""
    loaded = loaded_after(
        "import sys\n"
        "from pathlib import Path\n"
        "import pytest\n"
        "from adapters.app import load_platform_modules\n"
        "from bot.config.model import parse_config\n"
        "official = {'enabled': True, 'app_id': '102'}\n"
        "config = parse_config({'qq_official': official}, base_dir=Path('.'))\n"
        "load_platform_modules(config)\n"
        "assert not [name for name in sys.modules if name.startswith('cryptography')]\n"
        "from nonebot.adapters.qq import adapter\n"
        "with pytest.raises(RuntimeError, match='serves no QQ webhook'):\n"
        "    adapter.Ed25519PrivateKey.from_private_bytes(bytes(32))\n"
        "from cryptography.exceptions import InvalidSignature\n"
        "assert InvalidSignature.__module__ == 'cryptography.exceptions', InvalidSignature\n"
    )
    assert {"nonebot", "cryptography"} <= set(loaded)


def test_a_qq_only_config_loads_no_telegram_library() -> None:
    """Building the platforms of a QQ-only config loads no python-telegram-bot."""
    loaded = loaded_after(
        "from pathlib import Path\n"
        "from adapters.app import build_platforms, load_platform_modules\n"
        "from bot.config.model import parse_config\n"
        "from bot.secrets import Secrets\n"
        "config = parse_config({'qq': {'enabled': True}}, base_dir=Path('.'))\n"
        "load_platform_modules(config)\n"
        "platforms = build_platforms(config, Secrets('k', 'k'))\n"
        "assert list(platforms) == ['qq'], platforms\n"
    )
    assert ("nonebot" in loaded, "telegram" in loaded) == (True, False)


def test_the_sdk_waits_for_the_first_answer_and_recall_loads_nothing(tmp_path: Path) -> None:
    """Opening the store and the LLMs and recovering the core (embeddings off, the default)
    loads neither the ``openai`` SDK, numpy nor the JSON mender; keyword searches, in a chat
    without summaries and in one with a summary, load none of them and no segmenter."""
    loaded = loaded_after(
        "import asyncio, sys\n"
        "from datetime import date\n"
        "from pathlib import Path\n"
        "from adapters.app import opened_parts, running_core\n"
        "from bot.config.model import parse_config\n"
        "from bot.secrets import Secrets\n"
        "from bot.models import ChatKey\n"
        "from fakes.harness import push_day_summary\n"
        f"config = parse_config({{'bot': {{'data_dir': {str(tmp_path)!r}}}}}, base_dir=Path('.'))\n"
        "secrets = Secrets('k', 'k')\n"
        "async def start() -> None:\n"
        "    async with (\n"
        "        opened_parts(config, secrets) as parts,\n"
        "        running_core(config, secrets, {}, nightly=False, parts=parts),\n"
        "    ):\n"
        "        early = sorted({'openai', 'numpy', 'json_repair'} & set(sys.modules))\n"
        "        assert early == [], early\n"
        "        chat = ChatKey.parse('telegram:private:1')\n"
        "        await parts.store.search_summaries(chat, '杭州旅游', limit=3)\n"
        "        await push_day_summary(parts.store, chat, date(2026, 3, 5), '去杭州旅游')\n"
        "        await parts.store.search_summaries(chat, '杭州旅游', limit=3)\n"
        "asyncio.run(start())\n"
    )
    segmenters = sorted({"rjieba", "jieba"}.intersection(loaded))
    assert (segmenters, "openai" in loaded, "numpy" in loaded) == ([], False, False)
    assert "json_repair" not in loaded


def test_a_running_core_freezes_start_up_and_spaces_young_collections(tmp_path: Path) -> None:
    """Once the core is wired, what start-up made is frozen and the collector's youngest
    generation waits YOUNG_COLLECTION_ALLOCATIONS allocations, its older ones as before."""
    loaded_after(
        "import asyncio, gc\n"
        "from pathlib import Path\n"
        "from adapters.app import YOUNG_COLLECTION_ALLOCATIONS, opened_parts, running_core\n"
        "from bot.config.model import parse_config\n"
        "from bot.secrets import Secrets\n"
        f"config = parse_config({{'bot': {{'data_dir': {str(tmp_path)!r}}}}}, base_dir=Path('.'))\n"
        "before = gc.get_threshold()\n"
        "async def start() -> None:\n"
        "    async with (\n"
        "        opened_parts(config, Secrets('k', 'k')) as parts,\n"
        "        running_core(config, Secrets('k', 'k'), {}, nightly=False, parts=parts),\n"
        "    ):\n"
        "        spaced = (YOUNG_COLLECTION_ALLOCATIONS, *before[1:])\n"
        "        assert gc.get_threshold() == spaced != before, gc.get_threshold()\n"
        "        assert gc.get_freeze_count() > 10_000, gc.get_freeze_count()\n"
        "asyncio.run(start())\n"
    )


def test_the_sdk_loads_without_its_aiohttp_transport() -> None:
    """The deferred clients import the ``openai`` SDK with aiohttp (installed here for the
    tests) left out, which can still be imported afterwards, and freeze what they made."""
    loaded = loaded_after(
        "import gc\n"
        "from adapters.deferred import load\n"
        "frozen = gc.get_freeze_count()\n"
        "load('adapters.openai_llm')\n"
        "assert ('aiohttp' in sys.modules, gc.get_freeze_count() > frozen) == (False, True)\n"
        "import aiohttp\n"
    )
    assert ("openai" in loaded, "aiohttp" in loaded) == (True, True)


def test_a_run_with_an_mcp_server_loads_only_the_sdks_client_side() -> None:
    """The toolbox of a run with one stdio MCP server answers its tool with the ``mcp``
    SDK's client modules alone; a later ``from mcp import ...`` gets the whole package."""
    loaded = loaded_after(
        "import asyncio\n"
        "from pathlib import Path\n"
        "from adapters.tools.late import LateToolbox\n"
        "from bot.config.model import parse_config\n"
        "server = {'name': 'weather', 'command': sys.executable,\n"
        "          'args': ['-m', 'fakes.mcp_server'], 'allow': ['weather']}\n"
        "config = parse_config({'tools': {'enabled': True, 'mcp': [server]}}, base_dir=Path('.'))\n"
        "async def ask() -> str:\n"
        "    async with LateToolbox(config.tools, {}) as toolbox:\n"
        "        await toolbox.started(within_s=30)\n"
        "        return await toolbox.call('weather', {'city': 'Hangzhou'})\n"
        "answer = asyncio.run(ask())\n"
        "server_side = sorted(m for m in sys.modules if m.startswith('mcp.server'))\n"
        f"expected = 'Hangzhou: sunny, 21°C, light wind ({WEATHER_CANARY})'\n"
        "assert (answer, server_side) == (expected, []), (answer, server_side)\n"
        "from mcp import ClientSession, stdio_server\n"
        "assert 'mcp.server.stdio' in sys.modules\n"
    )
    assert "mcp" in loaded


def test_a_run_with_web_search_alone_loads_no_mcp_sdk() -> None:
    """A toolbox with the web search and no ``[[tools.mcp]]`` server loads no ``mcp``."""
    loaded = loaded_after(
        "import asyncio\n"
        "from pathlib import Path\n"
        "from adapters.tools.late import LateToolbox\n"
        "from bot.config.model import parse_config\n"
        "search = {'provider': 'searxng', 'base_url': 'http://127.0.0.1:9'}\n"
        "tools = {'enabled': True, 'web_search': search}\n"
        "config = parse_config({'tools': tools}, base_dir=Path('.'))\n"
        "async def offer() -> list[str]:\n"
        "    async with LateToolbox(config.tools, {}) as toolbox:\n"
        "        await toolbox.started(within_s=30)\n"
        "        return [tool.name for tool in toolbox.ready()]\n"
        "assert asyncio.run(offer()) == ['web_search']\n"
    )
    assert [name for name in ("mcp", "mcp_types") if name in loaded] == []


async def test_the_sdk_answers_with_the_chat_types_alone(
    tmp_path: Path, llm: FakeLLMServer
) -> None:
    """A chat completion and a tool call through the run's LLM client load the ``openai``
    SDK without the types of the endpoints it never calls (Responses, Assistants, audio)."""
    config = {"bot": {"data_dir": str(tmp_path)}, "llm": {"base_url": llm.base_url}}
    code = (
        "import asyncio\n"
        "from pathlib import Path\n"
        "from adapters.app import opened_parts\n"
        "from bot.config.model import parse_config\n"
        "from bot.models import ChatMessage, ToolSpec\n"
        "from bot.secrets import Secrets\n"
        f"config = parse_config({config!r}, base_dir=Path('.'))\n"
        "asked = [ChatMessage('system', 'be brief'), ChatMessage('user', 'weather?')]\n"
        "weather = ToolSpec('weather', 'the weather', '{\"type\": \"object\"}')\n"
        "async def ask() -> tuple[str, str]:\n"
        "    async with opened_parts(config, Secrets('k', 'k')) as parts:\n"
        "        called = await parts.llm.complete(asked, json_mode=False, tools=[weather])\n"
        "        said = await parts.llm.complete(asked, json_mode=True)\n"
        "        return called.tool_calls[0].name, said.text\n"
        "answers = asyncio.run(ask())\n"
        "assert answers == ('weather', 'sunny'), answers\n"
        "unused = ['openai.types.beta', 'openai.types.audio', 'openai.types.responses.response']\n"
        "assert [name for name in unused if name in sys.modules] == []\n"
    )
    llm.call_tool("weather", {})
    llm.reply("sunny")
    loaded = await asyncio.to_thread(loaded_after, code)
    assert ("openai" in loaded, len(llm.requests)) == (True, 2)


async def test_the_embeddings_client_waits_for_its_first_request(
    tmp_path: Path, llm: FakeLLMServer
) -> None:
    """With ``[memory.embeddings]`` on and nothing to embed, starting and back-filling load
    neither the ``openai`` SDK nor numpy; the first recall by meaning loads both and asks
    the endpoint through the real SDK."""
    config = {
        "bot": {"data_dir": str(tmp_path)},
        "memory": {"embeddings": {"model": "test-embedding", "base_url": llm.base_url}},
    }
    code = (
        "import asyncio, sys\n"
        "from pathlib import Path\n"
        "from adapters.app import opened_parts, running_core\n"
        "from bot.config.model import parse_config\n"
        "from bot.secrets import Secrets\n"
        "from bot.models import ChatKey\n"
        f"config = parse_config({config!r}, base_dir=Path('.'))\n"
        "secrets = Secrets('k', 'k', embeddings_api_key='k')\n"
        "async def start() -> None:\n"
        "    async with (\n"
        "        opened_parts(config, secrets) as parts,\n"
        "        running_core(config, secrets, {}, nightly=False, parts=parts),\n"
        "    ):\n"
        "        assert await parts.memory.embed_pending() == 0\n"
        "        early = sorted({'openai', 'numpy'} & set(sys.modules))\n"
        "        assert early == [], early\n"
        "        chat = ChatKey.parse('telegram:private:1')\n"
        "        assert parts.memory.semantic is not None\n"
        "        await parts.memory.semantic.similar(chat, '杭州旅游', limit=3)\n"
        "asyncio.run(start())\n"
    )
    loaded = await asyncio.to_thread(loaded_after, code)
    asked = [request["input"] for request in llm.embedding_requests]
    assert ("openai" in loaded, "numpy" in loaded, asked) == (True, True, [["杭州旅游"]])


def test_a_run_without_the_dashboard_loads_no_web_library() -> None:
    """With ``[web]`` off, the run's dashboard step serves nothing and loads no web library."""
    loaded = loaded_after(
        "import asyncio\n"
        "from pathlib import Path\n"
        "from adapters.app import serving_dashboard\n"
        "from bot.config.model import parse_config\n"
        "from bot.secrets import Secrets\n"
        "config = parse_config({'telegram': {'enabled': True}}, base_dir=Path('.'))\n"
        "async def serve() -> None:\n"
        "    async with serving_dashboard(config, Secrets('k', 'k'), None) as url:\n"
        "        assert url is None, url\n"
        "asyncio.run(serve())\n"
    )
    assert [name for name in WEB_LIBRARIES if name in loaded] == []


def after_the_console(tmp_path: Path, then: str = "") -> list[str]:
    """Chat in the console to the end of its (empty) input through ``pacebot console``'s
    road, run ``then``; return the top-level modules left loaded."""
    config = tmp_path / "config.toml"
    config.write_text(
        f'[bot]\ndata_dir = "{tmp_path / "data"}"\n[llm]\nbase_url = "http://127.0.0.1:9"\n',
        encoding="utf-8",
    )
    return loaded_after(
        "import os\n"
        "os.environ['PACEBOT_LLM_API_KEY'] = 'sk-architecture-test'\n"
        "from adapters.cli import main\n"
        f"assert main(['console', '-c', {str(config)!r}]) == 0\n{then}"
    )


def test_the_console_loads_no_platform_library(tmp_path: Path) -> None:
    """Chatting in the console to the end of its input loads no platform library."""
    loaded = after_the_console(tmp_path)
    assert [name for name in PLATFORM_LIBRARIES if name in loaded] == []


def test_a_run_leaves_out_http2_and_onebot_v12(tmp_path: Path) -> None:
    """After a run's start (the console's, which takes the same road), the platforms and
    HTTP clients load neither the HTTP/2 protocol nor nonebot's OneBot v12 adapter."""
    loaded = after_the_console(
        tmp_path,
        "import httpx, httpx2\n"
        "import adapters.qq.platform, adapters.telegram.platform\n"
        "clients = [httpx.AsyncClient(), httpx2.AsyncClient()]\n"
        "v12 = [name for name in sys.modules if name.startswith('nonebot.adapters.onebot.v12')]\n"
        "http2 = [name for name in ('h2', 'hpack') if sys.modules.get(name) is not None]\n"
        "assert (v12, http2) == ([], []), (v12, http2)\n",
    )
    assert ("nonebot" in loaded, "httpcore2" in loaded) == (True, True)
