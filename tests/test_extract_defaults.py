"""Each extraction default is stated once: the settings spec's row takes the library's constant,
and the library functions' own defaults are that same constant."""

from __future__ import annotations

import inspect

from harvester.config.spec import CONVERTERS, SETTINGS
from harvester.extract.converters import available_converters
from harvester.extract.page import extract_page
from harvester.extract.pdf import extract_pdf
from harvester.extract.template import TemplateLearner


def default_of(function: object, parameter: str) -> object:
    return inspect.signature(function).parameters[parameter].default


def test_the_library_defaults_are_the_spec_defaults() -> None:
    min_chars = SETTINGS["HARVESTER_EXTRACTION_MIN_CHARS"].default
    assert default_of(extract_page, "min_chars") == min_chars
    assert default_of(extract_pdf, "min_chars") == min_chars
    assert default_of(extract_page, "converter") == SETTINGS["HARVESTER_MARKDOWN_CONVERTER"].default
    assert default_of(TemplateLearner, "sample") == SETTINGS["HARVESTER_TEMPLATE_SAMPLE"].default
    assert TemplateLearner().sample == SETTINGS["HARVESTER_TEMPLATE_SAMPLE"].default


def test_every_converter_the_spec_accepts_is_registered() -> None:
    assert SETTINGS["HARVESTER_MARKDOWN_CONVERTER"].default in CONVERTERS
    assert set(CONVERTERS) <= set(available_converters())
