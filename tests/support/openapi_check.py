#!/usr/bin/python3
"""Checks one real HTTP exchange against an OpenAPI 3.0 document (docs/fleet-api.yaml).

Used by tests/cli/fleet_serve_test.cc with Debian's python3-jsonschema and python3-yaml only.

  openapi_check.py SPEC --path /api/v1/hosts/h100-a --method GET --status 200 \
      --content-type 'application/json' [--allow 'GET, HEAD'] [--body FILE] [--request FILE]
      The response (and, with --request, the request body) must be what SPEC says: the path
      matches a path template, the method is an operation of it (HEAD: its GET, without a body),
      the status is one of its responses, the Content-Type is one of that response's media types,
      and a JSON body validates against its schema. A method the path does not take must be a 405
      whose Allow lists exactly the path's methods (components/responses/MethodNotAllowed); a
      path no template matches must be a 404 (components/responses/NotFound). Prints the matched
      "METHOD TEMPLATE STATUS" on success.
  openapi_check.py SPEC --batch FILE
      FILE is a JSON list of exchanges {path, method, status, content_type, allow,
      www_authenticate, body, request} (body and request as text; request null = not checked).
      Prints "ok METHOD TEMPLATE STATUS" or "FAIL [index] why" per exchange, one line each.
  openapi_check.py SPEC --list-operations
      Prints "METHOD TEMPLATE" for every operation.
  openapi_check.py SPEC --lint
      Every $ref resolves, every schema is a valid JSON schema, and every object schema of
      components/schemas states additionalProperties (true, false or a schema).

Exit status: 0 conforms; 1 does not (why on stderr, or the FAIL lines); 2 bad arguments or an
unreadable SPEC or batch file.

OpenAPI 3.0 schemas are JSON Schema draft 4 plus `nullable`; `nullable: true` is rewritten into
a "null" type before validating with Draft4Validator.
"""

import argparse
import json
import re
import sys

import jsonschema
import yaml

METHODS = ["get", "put", "post", "delete", "options", "head", "patch", "trace"]


class CheckError(Exception):
    """An exchange or the spec does not conform."""


def fail(message):
    raise CheckError(message)


def load_spec(path):
    try:
        with open(path, encoding="utf-8") as f:
            return yaml.safe_load(f)
    except (OSError, yaml.YAMLError) as e:
        print("openapi_check: cannot read %s: %s" % (path, e), file=sys.stderr)
        sys.exit(2)


def resolve(spec, node):
    """Follows a {"$ref": "#/a/b"} object (repeatedly) to what it names."""
    seen = set()
    while isinstance(node, dict) and "$ref" in node:
        ref = node["$ref"]
        if ref in seen or not ref.startswith("#/"):
            fail("cannot resolve $ref %s" % ref)
        seen.add(ref)
        target = spec
        for part in ref[2:].split("/"):
            part = part.replace("~1", "/").replace("~0", "~")
            if not isinstance(target, dict) or part not in target:
                fail("$ref %s names nothing" % ref)
            target = target[part]
        node = target
    return node


def openapi_to_jsonschema(node):
    """Copies `node`, rewriting OpenAPI's `nullable: true` into JSON Schema."""
    if isinstance(node, list):
        return [openapi_to_jsonschema(x) for x in node]
    if not isinstance(node, dict):
        return node
    out = {k: openapi_to_jsonschema(v) for k, v in node.items() if k != "nullable"}
    if node.get("nullable") is True:
        if "type" in out:
            types = out["type"] if isinstance(out["type"], list) else [out["type"]]
            out["type"] = types + ["null"]
            if "enum" in out:
                out["enum"] = out["enum"] + [None]
        else:
            out = {"anyOf": [out, {"type": "null"}]}
    return out


def validate(spec, schema, document, what):
    """Validates `document` against `schema` (refs into the spec's components). Fails on error."""
    root = {"allOf": [openapi_to_jsonschema(schema)],
            "components": openapi_to_jsonschema(spec.get("components", {}))}
    validator = jsonschema.Draft4Validator(root)
    errors = sorted(validator.iter_errors(document), key=lambda e: list(e.absolute_path))
    if errors:
        lines = []
        for e in errors[:10]:
            where = "/".join(str(p) for p in e.absolute_path) or "(top level)"
            lines.append("  at %s: %s" % (where, e.message))
            # oneOf/anyOf failures: say why each branch failed.
            for sub in (e.context or [])[:6]:
                sub_where = "/".join(str(p) for p in sub.absolute_path) or "(top level)"
                lines.append("    - %s: %s" % (sub_where, sub.message))
        fail("%s does not match the spec:\n%s" % (what, "\n".join(lines)))


def template_regex(template):
    parts = re.split(r"(\{[^}/]+\})", template)
    return re.compile("^" + "".join("[^/]+" if p.startswith("{") else re.escape(p) for p in parts) + "$")


def match_path(spec, path):
    """The template of `path`: an exact (template-free) match first, then the first template."""
    paths = spec.get("paths", {})
    if path in paths:
        return path
    for template in paths:
        if "{" in template and template_regex(template).match(path):
            return template
    return None


def allowed_methods(path_item):
    methods = {m.upper() for m in METHODS if m in path_item}
    if "GET" in methods:
        methods.add("HEAD")
    return methods


def media_type(value):
    return value.split(";")[0].strip().lower()


def check_response(spec, response, status, content_type, body_text, head, what):
    response = resolve(spec, response)
    content = response.get("content")
    if not content:
        if body_text:
            fail("%s: the spec has no body for it, got %d bytes" % (what, len(body_text)))
        return
    if content_type is None:
        fail("%s: no Content-Type given to check" % what)
    wanted = {media_type(k): v for k, v in content.items()}
    got = media_type(content_type)
    if got not in wanted:
        fail("%s: Content-Type %s is not one the spec lists (%s)" % (what, content_type, ", ".join(sorted(content))))
    if head:
        if body_text:
            fail("%s: HEAD answered with a body" % what)
        return
    schema = wanted[got].get("schema")
    if schema is None:
        return
    if got == "application/json" or got.endswith("+json"):
        try:
            document = json.loads(body_text)
        except ValueError as e:
            fail("%s: the body is not JSON (%s): %.200r" % (what, e, body_text))
        validate(spec, schema, document, what + " body")
    elif resolve(spec, schema).get("type") == "string" and not isinstance(body_text, str):
        fail("%s: the body is not text" % what)


def check_headers(spec, response, headers, what):
    response = resolve(spec, response)
    for name, header in (response.get("headers") or {}).items():
        header = resolve(spec, header)
        if header.get("required") and name.lower() not in headers:
            fail("%s: header %s is required by the spec but was not given to check" % (what, name))


def read_text(path):
    if path is None:
        return ""
    with open(path, "rb") as f:
        data = f.read()
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        raise CheckError("%s is not UTF-8" % path)


class Exchange:
    """One request and its response, as the test saw them."""

    def __init__(self, fields):
        self.path = fields["path"]
        self.method = fields["method"]
        self.status = fields["status"]
        self.content_type = fields.get("content_type")
        self.allow = fields.get("allow")
        self.www_authenticate = fields.get("www_authenticate")
        self.body = fields.get("body", "")
        self.request = fields.get("request")  # the request body's text, or None: not checked


def check_exchange(spec, args):
    """Checks one Exchange; returns "METHOD TEMPLATE STATUS". Raises CheckError."""
    method = args.method.upper()
    status = str(args.status)
    body_text = args.body or ""
    headers = {}
    if args.allow is not None:
        headers["allow"] = args.allow
    if args.www_authenticate is not None:
        headers["www-authenticate"] = args.www_authenticate
    what = "%s %s -> %s" % (method, args.path, status)
    head = method == "HEAD"

    template = match_path(spec, args.path)
    components = spec.get("components", {}).get("responses", {})
    if template is None:
        if status != "404":
            fail("%s: the spec has no path %s (only a 404 may answer it)" % (what, args.path))
        check_response(spec, components["NotFound"], 404, args.content_type, body_text, head, what)
        return "%s (no path) 404" % method
    path_item = spec["paths"][template]
    operation = path_item.get(method.lower())
    if operation is None and head:
        operation = path_item.get("get")
    if operation is None:
        allowed = allowed_methods(path_item)
        if status != "405":
            fail("%s: the spec has no %s for %s (methods %s): only a 405 may answer it"
                 % (what, method, template, ", ".join(sorted(allowed))))
        if args.allow is None:
            fail("%s: a 405 needs an Allow header" % what)
        given = {m.strip().upper() for m in args.allow.split(",") if m.strip()}
        if given != allowed:
            fail("%s: Allow is '%s'; the spec's methods for %s are %s"
                 % (what, args.allow, template, ", ".join(sorted(allowed))))
        response = components["MethodNotAllowed"]
        # The HTTP server itself answers 405 on its own paths (/metrics, /health) in plain text.
        if media_type(args.content_type or "") == "text/plain" and template in ("/metrics", "/health"):
            return "%s %s 405" % (method, template)
        check_headers(spec, response, headers, what)
        check_response(spec, response, 405, args.content_type, body_text, head, what)
        return "%s %s 405" % (method, template)

    if args.request is not None:
        request_body = operation.get("requestBody")
        if request_body is None:
            fail("%s: the spec takes no request body for it" % what)
        request_body = resolve(spec, request_body)
        schema = request_body.get("content", {}).get("application/json", {}).get("schema")
        if schema is not None:
            try:
                document = json.loads(args.request)
            except ValueError as e:
                fail("%s: the request body is not JSON (%s)" % (what, e))
            validate(spec, schema, document, what + " request body")

    responses = operation.get("responses", {})
    response = responses.get(status, responses.get("default"))
    if response is None:
        fail("%s: status %s is not a response the spec lists for %s %s (%s)"
             % (what, status, method, template, ", ".join(sorted(responses))))
    check_headers(spec, response, headers, what)
    check_response(spec, response, int(status), args.content_type, body_text, head, what)
    return "%s %s %s" % ("GET" if head and "head" not in path_item else method, template, status)


def walk_refs(spec, node, where):
    if isinstance(node, dict):
        if "$ref" in node:
            resolve(spec, node)
        for k, v in node.items():
            walk_refs(spec, v, where + "/" + str(k))
    elif isinstance(node, list):
        for i, v in enumerate(node):
            walk_refs(spec, v, where + "/" + str(i))


def lint(spec):
    if not str(spec.get("openapi", "")).startswith("3.0"):
        fail("openapi is %r, expected 3.0.x" % spec.get("openapi"))
    walk_refs(spec, spec, "#")
    schemas = spec.get("components", {}).get("schemas", {})
    for name, schema in schemas.items():
        try:
            jsonschema.Draft4Validator.check_schema(openapi_to_jsonschema(schema))
        except jsonschema.exceptions.SchemaError as e:
            fail("components/schemas/%s is not a valid schema: %s" % (name, e.message))
        for sub_where, sub in object_schemas(schema, "components/schemas/" + name):
            if "additionalProperties" not in sub:
                fail("%s: an object schema must state additionalProperties" % sub_where)
    for template, item in spec.get("paths", {}).items():
        for method in METHODS:
            if method not in item:
                continue
            for status, response in item[method].get("responses", {}).items():
                response = resolve(spec, response)
                if "description" not in response:
                    fail("%s %s %s has no description" % (method.upper(), template, status))


def object_schemas(schema, where):
    """Every (where, schema) below `schema` that declares type object with properties."""
    if isinstance(schema, dict):
        if schema.get("type") == "object" and ("properties" in schema or "patternProperties" in schema):
            yield where, schema
        for k, v in schema.items():
            if k != "$ref":
                yield from object_schemas(v, where + "/" + str(k))
    elif isinstance(schema, list):
        for i, v in enumerate(schema):
            yield from object_schemas(v, where + "/" + str(i))


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("spec")
    parser.add_argument("--list-operations", action="store_true")
    parser.add_argument("--lint", action="store_true")
    parser.add_argument("--batch", help="JSON file: a list of exchanges")
    parser.add_argument("--path")
    parser.add_argument("--method")
    parser.add_argument("--status", type=int)
    parser.add_argument("--content-type")
    parser.add_argument("--allow")
    parser.add_argument("--www-authenticate")
    parser.add_argument("--body", help="file holding the response body")
    parser.add_argument("--request", help="file holding the request body")
    args = parser.parse_args()
    spec = load_spec(args.spec)
    if not isinstance(spec, dict) or "paths" not in spec:
        print("openapi_check: %s is not an OpenAPI document" % args.spec, file=sys.stderr)
        sys.exit(2)
    if args.list_operations:
        for template, item in spec["paths"].items():
            for method in METHODS:
                if method in item:
                    print("%s %s" % (method.upper(), template))
        return 0
    if args.lint:
        try:
            lint(spec)
        except CheckError as e:
            print("openapi_check: %s" % e, file=sys.stderr)
            return 1
        print("ok")
        return 0
    if args.batch is not None:
        try:
            with open(args.batch, encoding="utf-8") as f:
                exchanges = [Exchange(x) for x in json.load(f)]
        except (OSError, ValueError, KeyError, TypeError) as e:
            print("openapi_check: cannot read %s: %s" % (args.batch, e), file=sys.stderr)
            return 2
        failed = 0
        for i, exchange in enumerate(exchanges):
            try:
                print("ok %s" % check_exchange(spec, exchange))
            except CheckError as e:
                failed += 1
                print("FAIL [%d] %s" % (i, e))
        return 1 if failed else 0
    if args.path is None or args.method is None or args.status is None:
        parser.error("--path, --method and --status are required (or --batch, --list-operations, --lint)")
    try:
        exchange = Exchange({"path": args.path, "method": args.method, "status": args.status,
                             "content_type": args.content_type, "allow": args.allow,
                             "www_authenticate": args.www_authenticate, "body": read_text(args.body),
                             "request": None if args.request is None else read_text(args.request)})
        print(check_exchange(spec, exchange))
    except CheckError as e:
        print("openapi_check: %s" % e, file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
