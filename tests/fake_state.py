"""A stand-in for the handle Spark gives a StatefulProcessor's ``init``: map states held in dicts,
for tests that drive the leaderboard's processor directly (no JVM)."""

from __future__ import annotations


class FakeMapState(dict):
    def getValue(self, key):
        return self.get(key)

    def updateValue(self, key, value):
        self[key] = tuple(value)

    def removeKey(self, key):
        self.pop(key)

    def exists(self):
        return bool(self)


class FakeHandle:
    def __init__(self):
        self.states = {}

    def getMapState(self, name, *schemas):
        return self.states.setdefault(name, FakeMapState())
