"""For ``scrapyd-deploy`` only, which runs ``setup.py bdist_egg``: all the metadata is in
pyproject.toml, so the egg holds the ``harvester`` package and its ``scrapy`` settings entry point
and nothing else of the repository (a generated setup.py would package tests/ and bench/ too)."""

from setuptools import setup

setup()
