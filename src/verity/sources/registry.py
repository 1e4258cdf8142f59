"""Evidence sources by name.

    make_source("offline-wiki")
    make_source("corpus:climate")          # a corpus built with `verity index build`
    make_source("wikipedia:fr")            # French Wikipedia
    make_source("searxng:http://localhost:8888")
    make_source("factcheck:brave")         # politifact.com and snopes.com through Brave
    make_source("arxiv:offline")           # the stand-in corpus `standin-academic`

A spec is ``NAME`` or ``NAME:ARGUMENT``. Names are entry points in the ``verity.sources``
group, each a factory taking the optional argument; verity's own sources are registered
the same way in its ``pyproject.toml``.
"""

from __future__ import annotations

import os
from functools import cache
from importlib.metadata import entry_points
from typing import Any

from verity.errors import ConfigError, UnknownNameError
from verity.sources.base import Source

GROUP = "verity.sources"


@cache
def _registry() -> dict[str, Any]:
    return {ep.name: ep for ep in entry_points(group=GROUP)}


def source_names() -> list[str]:
    """Every registered source name."""
    return sorted(_registry())


def make_source(spec: str) -> Source:
    """Build the source a spec names; keys are read from the environment now."""
    name, _, arg = spec.strip().partition(":")
    try:
        entry = _registry()[name]
    except KeyError:
        raise UnknownNameError("source", name or spec, source_names()) from None
    factory = entry.load()
    source: Source = factory(arg or None)
    return source


# -- factories of the built-in sources (registered as entry points) ------------------------


def offline_wiki(arg: str | None) -> Source:
    """The embedded English Wikipedia summaries."""
    from verity.sources.offline_wiki import OfflineWiki

    if arg:
        raise ConfigError("offline-wiki takes no argument")
    return OfflineWiki()


def corpus(arg: str | None) -> Source:
    """A corpus built with ``verity index build PATH --name NAME``."""
    from verity.sources.corpus import CorpusSource

    if not arg:
        raise ConfigError("name the corpus: corpus:NAME")
    return CorpusSource(arg)


def wikipedia(arg: str | None) -> Source:
    """Live Wikipedia; the argument is a language code (default en)."""
    from verity.sources.wikipedia import WikipediaSource

    return WikipediaSource(lang=arg or "en")


def brave(arg: str | None) -> Source:
    """Brave Web Search (BRAVE_API_KEY)."""
    from verity.sources.websearch import BraveSearch

    _no_argument("brave", arg)
    return BraveSearch()


def serper(arg: str | None) -> Source:
    """Google results through Serper (SERPER_API_KEY)."""
    from verity.sources.websearch import SerperSearch

    _no_argument("serper", arg)
    return SerperSearch()


def tavily(arg: str | None) -> Source:
    """Tavily search (TAVILY_API_KEY)."""
    from verity.sources.websearch import TavilySearch

    _no_argument("tavily", arg)
    return TavilySearch()


def searxng(arg: str | None) -> Source:
    """A SearXNG instance; the argument (or SEARXNG_URL) is its base URL."""
    from verity.sources.websearch import SearxngSearch

    return SearxngSearch(base_url=arg)


def ddgs(arg: str | None) -> Source:
    """DuckDuckGo and other engines through the ddgs package (no key)."""
    from verity.sources.websearch import DdgsSearch

    _no_argument("ddgs", arg)
    return DdgsSearch()


def arxiv(arg: str | None) -> Source:
    """The arXiv API (``arxiv``) or its offline stand-in (``arxiv:offline``)."""
    from verity.sources.arxiv import ArxivSource

    if arg == "offline":
        return _standin("arxiv:offline")
    _no_argument("arxiv", arg, "offline")
    return ArxivSource()


def factcheck(arg: str | None) -> Source:
    """Fact-checking sites through a web provider, Google's ClaimReview search, or offline.

    ``factcheck`` searches them with ``ddgs``; ``factcheck:PROVIDER`` with one of the web
    providers (``brave``, ``serper``, ``tavily``, ``searxng``, ``ddgs``);
    ``factcheck:google`` is `GoogleFactCheck`; ``factcheck:offline`` the stand-in corpus
    `OfflineFactCheck`, whose ``publishers`` attribute names the site of its rulings.
    """
    from verity.sources.factcheck import FactCheckSearch, GoogleFactCheck
    from verity.sources.websearch import PROVIDERS

    if arg == "offline":
        return _standin("factcheck:offline")
    if arg == "google":
        return GoogleFactCheck()
    if arg is None:
        return FactCheckSearch()
    if arg not in PROVIDERS:
        choices = ", ".join(["google", "offline", *sorted(PROVIDERS)])
        raise ConfigError(f"factcheck takes one of {choices}, got {arg!r}")
    return FactCheckSearch(PROVIDERS[arg](), name=f"factcheck:{arg}")


def reddit(arg: str | None) -> Source:
    """Reddit posts with their top comments (REDDIT_CLIENT_ID, REDDIT_CLIENT_SECRET)."""
    from verity.sources.reddit import RedditSource

    _no_standin("reddit", arg)
    return RedditSource()


def social(arg: str | None) -> Source:
    """Bluesky posts, standing in for the paper's Twitter."""
    from verity.sources.social import BlueskySource

    _no_standin("social", arg)
    return BlueskySource()


def news_offline(arg: str | None) -> Source:
    """News articles standing in for the web offline (corpus ``standin-news``)."""
    _no_argument("news-offline", arg)
    return _standin("news-offline")


#: Offline stand-ins: spec -> (corpus, the NAME of `verity index build --standin NAME`).
STANDINS: dict[str, tuple[str, str]] = {
    "arxiv:offline": ("standin-academic", "academic"),
    "factcheck:offline": ("standin-factcheck", "factcheck"),
    "news-offline": ("standin-news", "news"),
}


# Sources that stand in for a tool of a paper, by the name their evidence carries: a run
# that uses one says so in its manifest and report, since its figures are not the paper's.
SUBSTITUTIONS: dict[str, str] = {
    "social": "Bluesky posts in place of the paper's Twitter (ToE §IV-B)",
    "factcheck:google": "Google Fact Check Tools ClaimReview search in place of the "
    "fact-checking sites PolitiFact and Snopes (ToE §III-B)",
    "arxiv:offline": "Check-COVID's CORD-19 abstracts, offline, in place of arXiv",
    "factcheck:offline": "PolitiFact rulings of LIAR-PLUS's validation split, offline, in "
    "place of the fact-checking sites",
    "news-offline": "PolitiFact and GossipCop news articles, offline, in place of web search",
}


def standin_built(spec: str) -> bool:
    """Whether the corpus of a stand-in spec has been built (`STANDINS`)."""
    from verity.sources.corpus import corpora_root

    corpus_name, _ = STANDINS[spec]
    return (corpora_root() / corpus_name / "manifest.json").is_file()


def _standin(spec: str) -> Source:
    """The corpus source of a stand-in, named by its spec; `ConfigError` when not built."""
    from verity.sources.corpus import CorpusSource
    from verity.sources.factcheck import OfflineFactCheck

    corpus_name, build_name = STANDINS[spec]
    if not standin_built(spec):
        raise ConfigError(
            f"{spec} searches the corpus {corpus_name!r}, which is not built: "
            f"run `verity index build --standin {build_name}`"
        )
    if spec == "factcheck:offline":
        return OfflineFactCheck(corpus_name, label=spec)
    return CorpusSource(corpus_name, label=spec)


def _no_argument(name: str, arg: str | None, *allowed: str) -> None:
    if arg:
        also = f" other than {', '.join(allowed)}" if allowed else ""
        raise ConfigError(f"{name} takes no argument{also}")


def _no_standin(name: str, arg: str | None) -> None:
    if arg == "offline":
        raise ConfigError(f"{name} has no offline stand-in")
    _no_argument(name, arg)


# name, what it is, the environment variable it needs (if any)
BUILT_IN: tuple[tuple[str, str, str | None], ...] = (
    ("offline-wiki", "embedded English Wikipedia summaries (about 10,000), BM25", None),
    ("corpus:NAME", "your documents, built with `verity index build PATH --name NAME`", None),
    ("wikipedia[:LANG]", "live Wikipedia: search, then page summaries", None),
    ("brave", "Brave Web Search API", "BRAVE_API_KEY"),
    ("serper", "Google results via the Serper API", "SERPER_API_KEY"),
    ("tavily", "Tavily search API", "TAVILY_API_KEY"),
    ("searxng[:URL]", "a SearXNG instance (JSON output enabled)", "SEARXNG_URL"),
    ("ddgs", "DuckDuckGo metasearch via the ddgs package (pip install 'verity[web]')", None),
    ("arxiv", "arXiv papers: API search, title and abstract (one request per 3 s)", None),
    ("arxiv:offline", "stand-in for arXiv: academic abstracts, BM25", None),
    (
        "factcheck[:PROVIDER]",
        "politifact.com and snopes.com via a web provider (default ddgs; or brave, serper, "
        "tavily, searxng)",
        None,
    ),
    (
        "factcheck:google",
        "Google Fact Check Tools ClaimReview search (a substitute for the paper's sites)",
        "GOOGLE_FACTCHECK_API_KEY",
    ),
    ("factcheck:offline", "stand-in for fact-checking sites: PolitiFact rulings, BM25", None),
    ("news-offline", "stand-in for the web: news articles, BM25", None),
    ("reddit", "Reddit posts with top comments (OAuth app-only)", "REDDIT_CLIENT_ID"),
    ("social", "Bluesky posts, standing in for the paper's Twitter", None),
)


def source_status() -> list[tuple[str, str, str]]:
    """Every built-in source, what it is, and whether it is ready here."""
    from verity.sources.corpus import list_corpora

    rows = []
    for name, what, env_var in BUILT_IN:
        if name.startswith("corpus"):
            built = [c.name for c in list_corpora()]
            status = "built: " + ", ".join(built) if built else "none built yet"
        elif name in STANDINS:
            corpus_name, build_name = STANDINS[name]
            status = (
                f"ready (corpus {corpus_name})"
                if standin_built(name)
                else f"not built: verity index build --standin {build_name}"
            )
        elif name == "reddit":
            both = ("REDDIT_CLIENT_ID", "REDDIT_CLIENT_SECRET")
            ready = all(os.environ.get(v, "").strip() for v in both)
            status = f"{' and '.join(both)} {'set' if ready else 'not set'}; no offline stand-in"
        elif name == "social":
            account = ("BLUESKY_HANDLE", "BLUESKY_APP_PASSWORD")
            status = (
                "ready (needs network; BLUESKY_HANDLE set)"
                if all(os.environ.get(v, "").strip() for v in account)
                else "needs network; without BLUESKY_HANDLE and BLUESKY_APP_PASSWORD "
                "Bluesky often refuses search"
            ) + "; no offline stand-in"
        elif env_var:
            status = f"{env_var} {'set' if os.environ.get(env_var) else 'not set'}"
        elif name.startswith(("wikipedia", "ddgs", "arxiv", "factcheck")):
            status = "ready (needs network)"
        else:
            status = "ready"
        rows.append((name, what, status))
    known = {n.split("[")[0].split(":")[0] for n, _, _ in BUILT_IN}
    rows.extend((n, "plug-in", "registered") for n in source_names() if n not in known)
    return rows


def kg_local(arg: str | None) -> Source:
    """The offline Wikidata graph (``kg-local``) or a loaded store (``kg-local:NAME``)."""
    from verity.kg.registry import make_kg
    from verity.sources.kg import GraphSource

    return GraphSource(make_kg(f"kg-local:{arg}" if arg else "kg-local"))


def wikidata(arg: str | None) -> Source:
    """Live Wikidata as a source of facts."""
    from verity.kg.registry import make_kg
    from verity.sources.kg import GraphSource

    _no_argument("wikidata", arg)
    return GraphSource(make_kg("wikidata"))
