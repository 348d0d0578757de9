"""Cluster mode adds its components the way the add-on adds every other: a user's own entry for one
(a priority, or None to turn it off) is left as the user wrote it."""

from __future__ import annotations

import pytest
from scrapy.settings import Settings

from harvester.addon import HarvesterAddon

POLITENESS = "harvester.cluster.politeness.ClusterPolitenessMiddleware"
LEASE_ACK = "harvester.cluster.frontier.LeaseAckMiddleware"


def cluster_settings(**values: object) -> Settings:
    settings = Settings({"HARVESTER_CLUSTER": True, "REDIS_URL": "redis://127.0.0.1:6379/0",
                         "QDRANT_URL": "http://qdrant:6333", **values}, priority="project")
    HarvesterAddon().update_settings(settings)
    return settings


@pytest.mark.parametrize(("name", "path"), [
    ("DOWNLOADER_MIDDLEWARES", POLITENESS),
    ("SPIDER_MIDDLEWARES", LEASE_ACK),
])
def test_a_cluster_component_the_user_turned_off_stays_off(name: str, path: str) -> None:
    settings = cluster_settings(**{name: {path: None}})
    assert settings.getdict(name)[path] is None


def test_a_cluster_component_keeps_the_users_priority() -> None:
    settings = cluster_settings(DOWNLOADER_MIDDLEWARES={POLITENESS: 123})
    assert settings.getdict("DOWNLOADER_MIDDLEWARES")[POLITENESS] == 123


def test_cluster_components_are_added_when_the_user_names_none() -> None:
    settings = cluster_settings()
    assert settings.getdict("DOWNLOADER_MIDDLEWARES")[POLITENESS] == 950
    assert settings.getdict("SPIDER_MIDDLEWARES")[LEASE_ACK] == 1
