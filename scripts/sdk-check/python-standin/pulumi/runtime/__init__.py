import json


class ResourceModule:
    pass


class ResourcePackage:
    pass


def register_resource_module(pkg, mod, module):
    pass


def register_resource_package(pkg, package):
    pass


def to_json(obj):
    return json.dumps(obj)


def call(tok, props, res=None, typ=None):
    raise NotImplementedError("stand-in pulumi: no engine")


def plain(x):
    return x
