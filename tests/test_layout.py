"""The package layout's rules, checked on the source: no import cycles between Harvester's modules,
and the cores (everything that is not a Scrapy component) import no Scrapy or Twisted, so that they
can be tested and benchmarked alone."""

from __future__ import annotations

import ast
from pathlib import Path

PACKAGE = Path(__file__).resolve().parent.parent / "harvester"
FRAMEWORKS = ("scrapy", "twisted", "scrapy_playwright", "scrapy_redis", "zope")
# Scrapy glue: components (middlewares, pipelines, extensions, handlers, spiders, commands), the
# add-on and the settings module. Every other module is a core.
GLUE_NAMES = {"middleware", "pipeline", "extension", "handler", "resolver", "fingerprint"}
GLUE_PACKAGES = {"spiders", "commands", "cluster", "fetch"}
GLUE_MODULES = {
    "harvester.addon", "harvester.settings",
    "harvester.exceptions",  # DropItem and IgnoreRequest subclasses, counted by Scrapy
    "harvester.sites",  # SiteProfiles.from_crawler; the profile files are read by sites.loader
    "harvester.report.failures",  # names Scrapy's and Twisted's failures
    "harvester.render.download",  # the download handler that loads the browser handler on first use
    "harvester.logformatter",  # Scrapy's LOG_FORMATTER
    "harvester.extract.template_hold",  # the extraction middleware's held pages: signals, requests
    "harvester.extract.outcome",  # the extraction middleware's stats, signals and browser requests
    "harvester.site_markdown.twins",  # the extraction middleware's twin requests, through the engine
}
CORES_THAT_ARE_NOT_GLUE = {"harvester.spiders.navigation", "harvester.fetch.encoding"}


def module_name(path: Path) -> str:
    parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


MODULES = {module_name(path): path for path in PACKAGE.rglob("*.py")}


def _type_checking(node: ast.AST) -> bool:
    return isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test)


def imports(path: Path) -> set[str]:
    """Every module imported anywhere in the file (functions too), but not for type checking."""
    found: set[str] = set()

    def visit(node: ast.AST) -> None:
        for child in ast.iter_child_nodes(node):
            if _type_checking(child):
                for sub in child.orelse:
                    visit(sub)
                continue
            if isinstance(child, ast.Import):
                found.update(alias.name for alias in child.names)
            elif isinstance(child, ast.ImportFrom) and child.module and not child.level:
                found.add(child.module)
                found.update(f"{child.module}.{alias.name}" for alias in child.names)
            visit(child)

    visit(ast.parse(path.read_text(encoding="utf-8")))
    return found


def internal_graph() -> dict[str, set[str]]:
    return {name: {m for m in imports(path) if m in MODULES and m != name} for name, path in MODULES.items()}


def is_glue(name: str) -> bool:
    parts = name.split(".")
    if name in CORES_THAT_ARE_NOT_GLUE:
        return False
    return name in GLUE_MODULES or parts[-1] in GLUE_NAMES or (len(parts) > 1 and parts[1] in GLUE_PACKAGES)


def test_no_import_cycles() -> None:
    graph = internal_graph()
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    cycles: list[list[str]] = []

    def connect(node: str) -> None:  # Tarjan's strongly connected components
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for target in graph[node]:
            if target not in index:
                connect(target)
                low[node] = min(low[node], low[target])
            elif target in on_stack:
                low[node] = min(low[node], index[target])
        if low[node] == index[node]:
            component = []
            while True:
                member = stack.pop()
                on_stack.discard(member)
                component.append(member)
                if member == node:
                    break
            if len(component) > 1:
                cycles.append(sorted(component))

    for node in graph:
        if node not in index:
            connect(node)
    assert not cycles, f"import cycles: {cycles}"


def test_cores_import_no_scrapy() -> None:
    offenders = {
        name: sorted(m for m in imports(path) if m.split(".")[0] in FRAMEWORKS)
        for name, path in MODULES.items()
        if not is_glue(name)
    }
    offenders = {name: found for name, found in offenders.items() if found}
    assert not offenders, f"core modules that import a framework: {offenders}"
    assert "harvester.extract.page" in MODULES and not is_glue("harvester.extract.page")


def test_the_tree_reads_as_the_product() -> None:
    packages = {path.name for path in PACKAGE.iterdir() if (path / "__init__.py").exists()}
    assert {"spiders", "urls", "fetch", "extract", "markdown", "dedup", "chunking", "embedding", "index",
            "recrawl", "guard", "render", "proxy", "sites", "cluster", "report", "config", "commands"} <= packages
    assert not packages & {"content", "middlewares", "pipelines", "extensions"}


def crawler_attributes_set(path: Path) -> list[str]:
    """``crawler.NAME = ...`` and ``setattr(crawler, ...)`` in a module: state hung off the crawler."""
    found = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        targets = node.targets if isinstance(node, ast.Assign) else [node.target] if isinstance(node, ast.AnnAssign) else []
        for target in targets:
            if (isinstance(target, ast.Attribute) and isinstance(target.value, ast.Name)
                    and target.value.id == "crawler"):
                found.append(f"crawler.{target.attr}")
        if (isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "setattr"
                and node.args and isinstance(node.args[0], ast.Name) and node.args[0].id == "crawler"):
            found.append("setattr(crawler, ...)")
    return found


def test_shared_crawl_state_is_typed_in_one_place() -> None:
    """Components share objects through harvester.state.CrawlState, not loose crawler attributes."""
    offenders = {name: found for name, path in MODULES.items()
                 if name != "harvester.state" and (found := crawler_attributes_set(path))}
    assert not offenders, f"state hung off the crawler outside harvester.state: {offenders}"
    assert crawler_attributes_set(MODULES["harvester.state"]) == ["setattr(crawler, ...)"]
