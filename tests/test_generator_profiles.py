"""What a generator profile says about its generator, and the render policy reading it from there."""

from __future__ import annotations

import pytest

from harvester.extract.classify import PageType, Verdict
from harvester.extract.profiles import GENERIC, REGISTRY
from harvester.render.policy import fallback_reason, is_server_rendered, is_static_generator
from harvester.sites import SiteProfile

WHOLE = {"sphinx-furo", "sphinx-pydata", "sphinx-rtd", "sphinx", "mkdocs-material", "mkdocs", "mdbook",
         "docbook", "asciidoc", "texinfo", "doxygen", "hugo-docsy", "hugo", "rustdoc", "javadoc"}
CLIENT_APPS = {"docusaurus", "vitepress", "gitbook"}


def test_every_profile_says_whether_its_generator_writes_pages_whole() -> None:
    assert {p.name for p in REGISTRY} == WHOLE | CLIENT_APPS
    assert {p.name for p in REGISTRY if p.writes_pages_whole} == WHOLE
    assert not GENERIC.writes_pages_whole


@pytest.mark.parametrize("profile", REGISTRY, ids=lambda p: p.name)
def test_the_render_policy_reads_the_profile(profile) -> None:
    assert is_static_generator(profile.name)
    assert is_server_rendered(profile.name) is profile.writes_pages_whole


def test_no_profile_no_generator_facts() -> None:
    for generator in (None, "", "generic", "not-a-generator"):
        assert not is_static_generator(generator)
        assert not is_server_rendered(generator)


def test_a_new_profile_is_read_without_editing_the_policy(monkeypatch: pytest.MonkeyPatch) -> None:
    from dataclasses import replace

    from harvester.extract import profiles

    shell = Verdict(PageType.APP_SHELL, "empty_mount", True)
    newcomer = replace(profiles.profile_by_name("mdbook"), name="zola", writes_pages_whole=True)
    assert fallback_reason(SiteProfile(), shell, status=200, rendered=False, generator="zola") == "app_shell"
    monkeypatch.setattr(profiles, "REGISTRY", [*profiles.REGISTRY, newcomer])
    assert fallback_reason(SiteProfile(), shell, status=200, rendered=False, generator="zola") is None
    monkeypatch.setattr(profiles, "REGISTRY", [*profiles.REGISTRY[:-1], replace(newcomer, writes_pages_whole=False)])
    assert fallback_reason(SiteProfile(), shell, status=200, rendered=False, generator="zola") == "app_shell"
