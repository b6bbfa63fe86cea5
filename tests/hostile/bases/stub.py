"""A module with every LAB_SPEC name and nothing behind it: placeholder data, bodies that raise.

Hostile cases built on it must score exactly what it scores alone (nothing):
whatever they print, forge or patch must not earn a point.
"""
from typing import TypedDict

REGIONS: list = []
FALLBACK_REGION = ""
MAX_ROWS = 0
CALLS: dict = {}
STOCK: list = []
TOOLS: dict = {}
CACHE: dict = {}
MAX_ATTEMPTS = 0
REPAIRS: dict = {}


class State(TypedDict):
    pass


def stock_lookup(sku, region, limit):
    raise NotImplementedError


def legacy_stock(sku, region, limit):
    raise NotImplementedError


def validate_args(name, args):
    raise NotImplementedError


def call_tool(name, args):
    raise NotImplementedError


def validate_result(name, value):
    raise NotImplementedError


def cache_key(name, args):
    raise NotImplementedError


def pick(state):
    raise NotImplementedError


def fetch(state):
    raise NotImplementedError


def reply(state):
    raise NotImplementedError


def giveup(state):
    raise NotImplementedError


def build_naive():
    raise NotImplementedError


def run_naive(order):
    raise NotImplementedError


def can_repair(reason):
    raise NotImplementedError


def repair(state):
    raise NotImplementedError


def build_graph():
    raise NotImplementedError


def handle(order):
    raise NotImplementedError


def write_report(folder=None):
    raise NotImplementedError


# Every public function, for payloads that wrap them all.
_FUNCTIONS = ("stock_lookup", "legacy_stock", "validate_args", "call_tool", "validate_result",
              "cache_key", "pick", "fetch", "reply", "giveup", "build_naive", "run_naive",
              "can_repair", "repair", "build_graph", "handle", "write_report")
