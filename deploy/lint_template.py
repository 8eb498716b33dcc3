#!/usr/bin/env python3
"""Lint template.yaml for every combination of its parameters.

Each parameter has two sides: each parameter with AllowedValues at both
ends, each other parameter at its default (empty for most Strings) and a
set value. The grid is every combination of the sides of the parameters
other than the authorization ones (COVERED); those are combined by a
covering selection rather than a product, which would multiply the grid
by 65,536 (below). A parameter that only passes a value to the function
(INERT: no Condition, Rule or Fn::If names it, which is checked) is at its
default everywhere and set in one probe. For every combination:

  * each value must pass its parameter's own constraints (AllowedPattern,
    AllowedValues, MinValue, MaxValue);
  * the template's Rules are evaluated; a combination they refuse must be
    exactly one the intent table below says is a mistake, refused by the
    rule named there, and is not linted as deployable;
  * otherwise the SAM translator transforms the template with the
    combination's values and cfn-lint lints the result with those values.
    Identical transforms are linted once, with all their combinations as
    cfn-lint parameter sets: cfn-lint resolves every Ref per set (honouring
    the conditions), so each combination is checked while the schema walk
    is paid once. (cfn-lint's own --parameters are dropped after its SAM
    transform, which is why the transform is done here.)

The covering selection. The sixteen COVERED parameters have 65,536
settings (ROWS); the Rules admit few of them (1,409: anonymous with nothing
else set, or an issuer with any of audience, key set, client ids, scopes,
step-up scopes, scope prefix and accepted audiences, each without the
registration facade, with it, and with it and redirect URIs, the last two
also with the authorization proxy and any of its two settings). Each combination
of the grid gets one admitted row, in turn (and, where that row lacks the
scopes a protected streaming door needs, once more with them; and a pairing
the turns miss gets a combination of its own), so the grid keeps its size and
every combination of the other parameters is still linted; and each of
the 65,536 rows is also tried with every other parameter at its default, so
that the Rules are seen refusing exactly the rows meant to be refused.
The check then verifies, rather than assumes, that every admitted row is
linted with each side of every other parameter (both ends of every
parameter, and every pair of values of two parameters that the Rules
admit together, a COVERED one included), and every combination of the
other parameters' sides appears.

Also: cfn-lint's own run on template.yaml as it stands, a few rule probes
(throttling, an audience that differs from EndpointUrl), values each
AllowedPattern must refuse, and what the alarms must and must not see of
the streaming door's authorizer (check_authorizer). Any error or warning
fails the check; a circular dependency (E3004) is named as such.

Usage: python3 deploy/lint_template.py [template.yaml]
"""

from __future__ import annotations

import copy
import hashlib
import itertools
import json
import multiprocessing
import os
import re
import sys
import time

STARTED = time.monotonic()
REGION = "us-east-1"
os.environ.setdefault("AWS_DEFAULT_REGION", REGION)

from cfnlint.config import ConfigMixIn  # noqa: E402
from cfnlint.context.parameters import ParameterSet  # noqa: E402
from cfnlint.decode import decode  # noqa: E402
from cfnlint.runner import Runner  # noqa: E402
from cfnlint.runner.template.runner import run_template_by_data  # noqa: E402
import boto3  # noqa: E402
from samtranslator.parser import parser as sam_parser  # noqa: E402
from samtranslator.policy_template_processor.processor import PolicyTemplatesProcessor  # noqa: E402
from samtranslator.translator import translator as sam_translator  # noqa: E402

# The set value of each String and plain Number parameter (the empty string
# and the default are the other sides). A parameter missing here fails the
# check, so a new parameter cannot escape it.
SET_VALUES = {
    "EndpointUrl": "https://mcp.example.com/mcp",
    "AllowedOrigins": "https://app.example.com,http://localhost:3000",
    "JwtIssuer": "https://issuer.example.com/",
    "AuthIssuer": "https://cognito-idp.us-east-1.amazonaws.com/us-east-1_Example",
    # The same URL as EndpointUrl's: both name the endpoint (a Rule), and
    # the grid pairs them every way.
    "AuthAudience": "https://mcp.example.com/mcp",
    "AuthJwksUrl": "https://cognito-idp.us-east-1.amazonaws.com/us-east-1_Example/.well-known/jwks.json",
    "AuthScopesSupported": "mcp:tools notes:read",
    "AuthClientIds": "5b2ab1c0example,app-client-2",
    "JwtAudience": "mcp-endpoint,https://mcp.example.com/mcp",
    "AlarmTopicArn": "arn:aws:sns:us-east-1:123456789012:mcp-alarms",
    "ReservedConcurrency": "10",
    "ThrottlingBurstLimit": "5000",
    "ThrottlingRateLimit": "10000",
    "StreamingCertificateArn": "arn:aws:acm:us-east-1:123456789012:certificate/12345678-1234-1234-1234-123456789012",
    "AuthStepUpScopes": "mcp:tools notes:read notes:write",
    "AuthScopePrefix": "https://mcp.example.com/mcp/",
    "AuthAcceptedAudiences": "6f1d2c3b-4a5e-4f60-8a7b-9c0d1e2f3a4b",
    "AuthRegistrationClientId": "5b2ab1c0example",
    "AuthAuthorizationEndpoint": "https://example.auth.us-east-1.amazoncognito.com/oauth2/authorize",
    "AuthTokenEndpoint": "https://example.auth.us-east-1.amazoncognito.com/oauth2/token",
    "AuthRegistrationRedirectUris": "https://app.example.com/callback,vscode://callback",
    "Quotas": "calls=120/1m,tasks=3,streams=off",
    "AuthProxyPreApprovedClients": "https://app.example.com/oauth/client-metadata.json,https://tools.example.org/.well-known/mcp-client",
}

# The authorization parameters, combined by a covering selection (above).
COVERED = ["AuthIssuer", "AuthAudience", "AuthJwksUrl", "AuthClientIds", "AuthScopesSupported", "AuthStepUpScopes", "AllowAnonymous",
           "AuthRegistrationClientId", "AuthAuthorizationEndpoint", "AuthTokenEndpoint", "AuthRegistrationRedirectUris",
           "AuthScopePrefix", "AuthAcceptedAudiences", "AuthProxy", "AuthProxyPreApprovedClients", "AuthProxyOmitResource"]

# Parameters that are only a value the function reads: no Condition, Rule
# or Fn::If names them (checked), so they cannot change the template's
# shape or what the Rules admit. They are linted at their default
# everywhere and once with their set value (a probe), not crossed with the
# others, which would double the grid for nothing.
INERT = ["Quotas"]


# What each Rule is meant to refuse, said independently of the template.
INTENT = {
    "ProtectedNeedsAuthIssuer": lambda p: p["AllowAnonymous"] == "false" and p["AuthIssuer"] == "",
    "AnonymousContradictsAuthIssuer": lambda p: p["AllowAnonymous"] == "true" and p["AuthIssuer"] != "",
    "AuthAudienceNeedsIssuer": lambda p: p["AuthAudience"] != "" and p["AuthIssuer"] == "",
    "AuthJwksUrlNeedsIssuer": lambda p: p["AuthJwksUrl"] != "" and p["AuthIssuer"] == "",
    "AuthClientIdsNeedIssuer": lambda p: p["AuthClientIds"] != "" and p["AuthIssuer"] == "",
    "AuthScopesNeedIssuer": lambda p: p["AuthScopesSupported"] != "" and p["AuthIssuer"] == "",
    "StreamingMetadataNeedsScopes": lambda p: p["StreamingDoor"] == "true" and p["AuthIssuer"] != "" and p["AuthScopesSupported"] == "",
    "AuthScopePrefixNeedsIssuer": lambda p: (p["AuthScopePrefix"] != "" or p["AuthAcceptedAudiences"] != "") and p["AuthIssuer"] == "",
    "AuthRegistrationNeedsIssuer": lambda p: p["AuthRegistrationClientId"] != "" and p["AuthIssuer"] == "",
    "AuthRegistrationNeedsEndpoints": lambda p: p["AuthRegistrationClientId"] != "" and (p["AuthAuthorizationEndpoint"] == "" or p["AuthTokenEndpoint"] == ""),
    "AuthRegistrationSettingsNeedClientId": lambda p: p["AuthRegistrationClientId"] == "" and (p["AuthAuthorizationEndpoint"] != "" or p["AuthTokenEndpoint"] != "" or p["AuthRegistrationRedirectUris"] != ""),
    "AuthProxyNeedsRegistration": lambda p: p["AuthProxy"] == "true" and "" in (p["AuthIssuer"], p["AuthRegistrationClientId"], p["AuthAuthorizationEndpoint"], p["AuthTokenEndpoint"]),
    "AuthProxySettingsNeedProxy": lambda p: p["AuthProxy"] != "true" and (p["AuthProxyPreApprovedClients"] != "" or p["AuthProxyOmitResource"] == "true"),
    "AuthAudienceMatchesEndpointUrl": lambda p: p["AuthAudience"] != "" and p["EndpointUrl"] != "" and p["AuthAudience"] != p["EndpointUrl"],
    "JwtIssuerNeedsAudience": lambda p: p["JwtIssuer"] != "" and p["JwtAudience"] == "",
    "JwtAudienceNeedsIssuer": lambda p: p["JwtAudience"] != "" and p["JwtIssuer"] == "",
    "StreamingCertificateNeedsDoorAndUrl": lambda p: p["StreamingCertificateArn"] != "" and (p["StreamingDoor"] != "true" or p["EndpointUrl"] == ""),
    "ProtectedStreamingNeedsDomain": lambda p: p["StreamingDoor"] == "true" and p["AuthIssuer"] != "" and p["StreamingCertificateArn"] == "",
    "AuthStepUpScopesNeedIssuer": lambda p: p["AuthStepUpScopes"] != "" and p["AuthIssuer"] == "",
    "ThrottlingRateNeedsBurst": lambda p: float(p["ThrottlingBurstLimit"]) == 0 and float(p["ThrottlingRateLimit"]) != 0,
    "ThrottlingBurstNeedsRate": lambda p: float(p["ThrottlingRateLimit"]) == 0 and float(p["ThrottlingBurstLimit"]) != 0,
}

# Combinations beyond the grid (everything else at its default, with an
# issuer: the default deploys protected), so that the throttling Rules are
# seen refusing and both limits at 0 admitted, and an audience other than
# EndpointUrl refused.
PROBE_BASE = {"AuthIssuer": SET_VALUES["AuthIssuer"]}
PROBES = [
    {"Quotas": SET_VALUES["Quotas"]},
    {"ThrottlingBurstLimit": "0", "ThrottlingRateLimit": "0"},
    {"ThrottlingBurstLimit": "0", "ThrottlingRateLimit": "50"},
    {"ThrottlingBurstLimit": "100", "ThrottlingRateLimit": "0"},
    {"EndpointUrl": "https://mcp.example.com/mcp", "AuthAudience": "https://other.example.com/mcp"},
    {"EndpointUrl": "https://mcp.example.com/mcp", "AuthAudience": "https://mcp.example.com/mcp"},
]

# Values each parameter's constraints must refuse.
INVALID = {
    "EndpointUrl": ["http://mcp.example.com/mcp", "https://mcp.example.com/mcp?x=1", "mcp.example.com"],
    "AllowedOrigins": ["https://app.example.com/", "https://a.example.com, https://b.example.com", "*", "app.example.com"],
    "JwtIssuer": ["http://issuer.example.com", "https://a.example.com,https://b.example.com"],
    "JwtAudience": ["a, b", "a,,b", ","],
    "AuthIssuer": ["http://issuer.example.com", "https://issuer.example.com/#frag", "https://issuer.example.com?x=1", "https://", "issuer.example.com"],
    "AuthAudience": ["http://mcp.example.com/mcp", "https://mcp.example.com/mcp#x", "mcp-endpoint"],
    "AuthJwksUrl": ["http://issuer.example.com/jwks.json", "https:// x"],
    "AuthScopesSupported": ["a  b", " a", 'a"b', "a\\b"],
    "AuthClientIds": ["a, b", "a,,b", ",", "a b"],
    "AllowAnonymous": ["yes", "True"],
    "AlarmTopicArn": ["arn:aws:sqs:us-east-1:123456789012:q", "arn:aws:sns:us-east-1:123456789012:t.fifo"],
    "ReservedConcurrency": ["-2"],
    "ThrottlingBurstLimit": ["-1", "5001"],
    "ThrottlingRateLimit": ["-1"],
    "LogRetentionDays": ["2"],
    "StreamingCertificateArn": ["arn:aws:iam::123456789012:role/x", "certificate/abc", "arn:aws:acm:us-east-1:1:certificate/x"],
    "AuthStepUpScopes": ["a  b", " a", 'a"b', "a\\b"],
    "AuthScopePrefix": ["a b", 'a"b', "a\\b"],
    "AuthAcceptedAudiences": ["a, b", "a,,b", ",", "a b"],
    "AuthRegistrationClientId": ["a b", 'a"b'],
    "AuthAuthorizationEndpoint": ["http://example.com/authorize", "https://example.com/authorize?x=1", "https://example.com/a#f"],
    "AuthTokenEndpoint": ["http://example.com/token", "https://example.com/token?x=1"],
    "AuthRegistrationRedirectUris": ["https://a.example/cb#f", "https://a.example/cb, https://b.example/cb", ","],
    "AuthProxy": ["yes", "True", ""],
    "AuthProxyOmitResource": ["yes", "True", ""],
    "AuthProxyPreApprovedClients": ["http://app.example.com/client.json", "https://app.example.com", "https://app.example.com/", "https://app.example.com/a/../b",
                                    "https://app.example.com/./b", "https://app.example.com/c#f", "https://a.example/c, https://b.example/c", ",", "https://a.example/c,",
                                    "https://app.example.com:443/c", 'https://app.example.com/"c', "https://app.example.com/c\\d"],
    "Quotas": ["calls=600", "calls=0/1m", "tasks=-1", "tasks=ten", "workers=3", "calls=600/1m, tasks=3", "on", ",", "tasks=10001"],
}


# The authorizer's report, as the function writes it (pkg/stateless:
# MethodAuthorize, and the Decision names; pkg/observe's
# TestAuthorizerLines holds the function's lines to them).
AUTHORIZER_METHOD = "authorize"
AUTHORIZER_UNAVAILABLE = "unavailable"
AUTHORIZER_ROUTINE = ["unauthorized", "forbidden"]
# What the authorizer validates tokens with: the MCP function's settings;
# and the claims table's name, which it never uses (its role reaches no
# table) but which keeps it from warning at each cold start that its
# claims are per instance.
AUTHORIZER_SETTINGS = re.compile(r"MCP_AUTH_.*|MCP_AUDIENCE|MCP_ALLOW_ANONYMOUS|MCP_CLAIMS_TABLE")


def _fn_ifs(node):
    """Every Fn::If in node, which may name a parameter in its branches."""
    if isinstance(node, dict):
        for k, v in node.items():
            if k == "Fn::If":
                yield v
            yield from _fn_ifs(v)
    elif isinstance(node, list):
        for v in node:
            yield from _fn_ifs(v)


def check_authorizer(sam):
    """What the alarms must see of the streaming door's authorizer, and
    what they must not. A refused token is a failed invocation of the
    authorizer (the contract's "Unauthorized"), which Lambda counts in the
    function's Errors: so the authorizer is a function of its own, the MCP
    function's binary with its token settings, and no alarm watches its
    Errors or its routine refusals. An issuer's or key set's outage fails
    every request through the door closed, each a decision "unavailable",
    which an alarm watches; the door's own 5xx (the integration failing)
    another. The problems found."""
    res = sam["Resources"]
    problems = []
    fn = "StreamAuthorizerFunction"
    authorizer = res.get("StreamAuthorizer", {})
    if "${%s.Arn}" % fn not in json.dumps(authorizer.get("Properties", {}).get("AuthorizerUri")):
        problems.append(f"StreamAuthorizer does not invoke {fn}: each refused token would be a failed invocation of the function it invokes")
    own, mcp = res.get(fn, {}), res["McpFunction"]
    if own.get("Type") != "AWS::Serverless::Function":
        problems.append(f"no {fn}: the streaming door's authorizer is a function of its own")
    if own.get("Condition") != authorizer.get("Condition"):
        problems.append(f"{fn} has Condition {own.get('Condition')}, StreamAuthorizer {authorizer.get('Condition')}")
    if own.get("Metadata") != mcp.get("Metadata") or own.get("Properties", {}).get("CodeUri") != mcp["Properties"].get("CodeUri"):
        problems.append(f"{fn} is not built as McpFunction is: the authorizer is the same binary")
    mine = own.get("Properties", {}).get("Environment", {}).get("Variables", {})
    # The authorizer exists only with an issuer: where McpFunction's value
    # depends on one, the authorizer's is that branch.
    theirs = {n: v["Fn::If"][1] if isinstance(v, dict) and v.get("Fn::If", [None])[0] == "HasAuthIssuer" else v
              for n, v in mcp["Properties"].get("Environment", {}).get("Variables", {}).items()}
    for name in sorted(set(mine) | {n for n in theirs if AUTHORIZER_SETTINGS.fullmatch(n)}):
        if not AUTHORIZER_SETTINGS.fullmatch(name) or mine.get(name) != theirs.get(name):
            problems.append(f"{fn} {name} = {mine.get(name)!r}, McpFunction's {theirs.get(name)!r}: the authorizer takes the token settings and nothing else")
    permission = res.get("StreamAuthorizerPermission", {}).get("Properties", {})
    if permission.get("FunctionName") != {"Fn::GetAtt": [fn, "Arn"]}:
        problems.append(f"StreamAuthorizerPermission lets API Gateway invoke {permission.get('FunctionName')}, not {fn}")

    alarms = {n: r for n, r in res.items() if r.get("Type") == "AWS::CloudWatch::Alarm"}

    def dims(alarm):
        return {d["Name"]: d["Value"] for d in alarm["Properties"].get("Dimensions", [])}

    for name, alarm in alarms.items():
        p = alarm["Properties"]
        if p.get("MetricName") in ("Errors", "4XXError") and fn in json.dumps(dims(alarm)) + json.dumps(p.get("Dimensions")):
            problems.append(f"{name} watches {fn}'s {p['MetricName']}, which every refused token adds to")
        if p.get("MetricName") == "4XXError":
            problems.append(f"{name} watches 4XXError: the door's routine refusals (401, 403)")
        if dims(alarm).get("Outcome") in AUTHORIZER_ROUTINE:
            problems.append(f"{name} watches the authorizer's routine refusals ({dims(alarm)['Outcome']})")
    unavailable = [n for n, a in alarms.items() if a["Properties"].get("Namespace") == {"Ref": "AWS::StackName"}
                   and a["Properties"].get("MetricName") == "Requests"
                   and dims(a) == {"Function": {"Ref": fn}, "Method": AUTHORIZER_METHOD, "Outcome": AUTHORIZER_UNAVAILABLE}]
    if [alarms[n].get("Condition") for n in unavailable] != [authorizer.get("Condition")]:
        problems.append(f"alarms on the authorizer's {AUTHORIZER_UNAVAILABLE!r} decisions: {unavailable}, want one, with StreamAuthorizer's Condition")
    api = res.get("StreamApi", {})
    door = [n for n, a in alarms.items() if a["Properties"].get("Namespace") == "AWS/ApiGateway" and a["Properties"].get("MetricName") == "5XXError"
            and dims(a) == {"ApiName": api.get("Properties", {}).get("Name"), "Stage": {"Ref": "StreamStage"}}]
    if [alarms[n].get("Condition") for n in door] != [api.get("Condition")]:
        problems.append(f"alarms on the streaming door's 5XXError by its ApiName and stage: {door}, want one, with StreamApi's Condition")
    return problems


def plain(node):
    """The decoded template as plain dicts, lists and strings."""
    return json.loads(json.dumps(node))


def check_value(spec, value):
    """Why value breaks its parameter's constraints, or None."""
    if "AllowedValues" in spec and value not in [str(v) for v in spec["AllowedValues"]]:
        return "not in AllowedValues"
    if "AllowedPattern" in spec and not re.fullmatch(spec["AllowedPattern"], value):
        return "does not match AllowedPattern"
    if spec.get("Type") == "Number":
        try:
            n = float(value)
        except ValueError:
            return "not a number"
        if "MinValue" in spec and n < float(spec["MinValue"]):
            return "below MinValue"
        if "MaxValue" in spec and n > float(spec["MaxValue"]):
            return "above MaxValue"
    return None


def evaluate(expr, params):
    """A Rules expression under the given parameter values."""
    if isinstance(expr, (str, int, float, bool)):
        return str(expr) if not isinstance(expr, bool) else expr
    if isinstance(expr, list):
        return [evaluate(e, params) for e in expr]
    if not isinstance(expr, dict) or len(expr) != 1:
        raise ValueError(f"cannot evaluate {expr!r}")
    (fn, arg), = expr.items()
    if fn == "Ref":
        return params[arg]
    if fn == "Fn::Equals":
        a, b = (evaluate(x, params) for x in arg)
        return a == b
    if fn == "Fn::Not":
        return not evaluate(arg[0], params)
    if fn == "Fn::And":
        return all(evaluate(x, params) for x in arg)
    if fn == "Fn::Or":
        return any(evaluate(x, params) for x in arg)
    if fn == "Fn::Contains":
        return evaluate(arg[1], params) in evaluate(arg[0], params)
    raise ValueError(f"{fn} is not evaluated by this check: extend evaluate()")


def refusing_rules(rules, params):
    """The names of the Rules whose assertions fail for params."""
    out = set()
    for name, rule in rules.items():
        if "RuleCondition" in rule and not evaluate(rule["RuleCondition"], params):
            continue
        if not all(evaluate(a["Assert"], params) for a in rule["Assertions"]):
            out.add(name)
    return out


# Two costs of a translation that do not depend on the template: a boto3
# session (for the region) and validating SAM's own policy templates. Paid
# once, a translation takes milliseconds.
_SESSION = boto3.session.Session(region_name=REGION)
_POLICY_TEMPLATES = PolicyTemplatesProcessor(PolicyTemplatesProcessor.get_default_policy_templates_json())
if hasattr(sam_translator, "make_policy_template_for_function_plugin"):
    from samtranslator.plugins.policies.policy_templates_plugin import PolicyTemplatesForResourcePlugin  # noqa: E402

    sam_translator.make_policy_template_for_function_plugin = lambda: PolicyTemplatesForResourcePlugin(_POLICY_TEMPLATES)


def transform(sam, params):
    """The template transformed by the SAM translator with params."""
    src = copy.deepcopy(sam)
    for res in src["Resources"].values():
        if res.get("Type") == "AWS::Serverless::Function":
            # As sam build and sam package replace the local code directory.
            res["Properties"]["CodeUri"] = "s3://bucket/key"
    translator = sam_translator.Translator(managed_policy_map={}, sam_parser=sam_parser.Parser(), boto_session=_SESSION)
    return translator.translate(sam_template=src, parameter_values=dict(params), passthrough_metadata=True)


def digest(tmpl):
    return hashlib.sha256(json.dumps(tmpl, sort_keys=True).encode()).hexdigest()


# Set before the worker processes fork, which inherit them.
_SAM = None
_DECODED = None
_RULES = None


def lint(tmpl, parameter_sets=()):
    config = ConfigMixIn(regions=[REGION], parameters=[ParameterSet(parameters=p) for p in parameter_sets])
    return [(m.rule.id, f"{m.rule.id} {m.message} (line {m.linenumber})") for m in run_template_by_data(copy.deepcopy(tmpl), config, _RULES)]


def show(params):
    """A combination as its values other than the defaults."""
    specs = _SAM["Parameters"]
    diff = [f"{k}={v!r}" for k, v in params.items() if v != str(specs[k].get("Default", ""))]
    return "{" + ", ".join(diff) + "}" if diff else "{all defaults}"


def _transform_digest(params):
    return digest(transform(_SAM, params))


def _lint_job(sets):
    """Findings as (where, rule id, description): cfn-lint's own run on the
    template when sets is None, else the transform of sets[0] linted with
    every combination in sets."""
    if sets is None:
        return [("cfn-lint template.yaml", rid, text) for rid, text in lint(_DECODED)]
    tmpl = transform(_SAM, sets[0])
    found = lint(tmpl, sets)
    if not found:
        return []
    # Name one failing combination by halving: a few lints, not one each.
    bad = sets
    while len(bad) > 1:
        half = len(bad) // 2
        bad = bad[:half] if lint(tmpl, bad[:half]) else bad[half:]
    return [(f"{len(sets)} combinations, failing for example {show(bad[0])}", rid, text) for rid, text in found]


def main():
    global _SAM, _DECODED, _RULES
    path = sys.argv[1] if len(sys.argv) > 1 else os.path.join(os.path.dirname(__file__), "..", "template.yaml")
    decoded, errs = decode(path)
    if errs:
        for e in errs:
            print(f"template: {e.rule.id} {e.message} (line {e.linenumber})")
        return 1
    sam = plain(decoded)
    _SAM = sam
    problems = []
    warnings = 0

    specs = sam.get("Parameters", {})
    rules = sam.get("Rules", {})

    # The sides of each parameter.
    sides = {}
    for name, spec in specs.items():
        if "AllowedValues" in spec:
            allowed = [str(v) for v in spec["AllowedValues"]]
            sides[name] = [allowed[0], allowed[-1]]
        elif name in SET_VALUES:
            sides[name] = [str(spec.get("Default", "")), SET_VALUES[name]]
        else:
            problems.append(f"parameter {name}: no set value in SET_VALUES of {os.path.basename(__file__)}")
    for name in SET_VALUES:
        if name not in specs:
            problems.append(f"SET_VALUES names {name}, which the template does not declare")
    for name in COVERED:
        if name not in specs:
            problems.append(f"COVERED names {name}, which the template does not declare")
    shaping = json.dumps([sam.get("Conditions", {}), rules, [v for v in _fn_ifs(sam)]])
    for name in INERT:
        if name not in specs:
            problems.append(f"INERT names {name}, which the template does not declare")
        elif json.dumps({"Ref": name}) in shaping:
            problems.append(f"INERT names {name}, which a Condition, a Rule or an Fn::If names: it can change the template's shape")
    if set(INTENT) != set(rules):
        problems.append(f"Rules {sorted(rules)} and the intent table {sorted(INTENT)} differ")
    problems += check_authorizer(sam)
    if problems:
        print("\n".join(f"template: {p}" for p in problems))
        return 1

    for name, spec in specs.items():
        for v in sides[name]:
            if why := check_value(spec, v):
                problems.append(f"parameter {name}={v!r} {why}")
        for v in INVALID.get(name, []):
            if check_value(spec, v) is None:
                problems.append(f"parameter {name} admits the invalid value {v!r}")

    names = list(specs)
    defaults = {n: str(specs[n].get("Default", "")) for n in names}
    crossed = [n for n in names if n not in COVERED and n not in INERT]
    rows = [dict(zip(COVERED, vals)) for vals in itertools.product(*(sides[n] for n in COVERED))]
    admitted = [r for r in rows if not refusing_rules(rules, {**defaults, **r})]
    if not admitted:
        print("template: the Rules admit no setting of " + ", ".join(COVERED))
        return 1
    grid = [
        {**dict(zip(crossed, vals)), **admitted[i % len(admitted)]}
        for i, vals in enumerate(itertools.product(*(sides[n] for n in crossed)))
    ]
    # A row the Rules admit alone can be refused with some other setting (a
    # protected streaming door needs scopes): each such combination is also
    # tried with the scopes set, so that the door is linted with that row's
    # other settings.
    grid += [
        {**p, "AuthScopesSupported": SET_VALUES["AuthScopesSupported"]}
        for p in grid
        if refusing_rules(rules, p) == {"StreamingMetadataNeedsScopes"}
    ]
    # The turn order can miss a pairing: an admitted row never meets one
    # side of another parameter in a combination the Rules admit (some
    # rows are refused with the streaming door). Each such pairing gets a
    # combination of its own: the first admitted one with that side, with
    # the row in it.
    admitted_grid = [p for p in grid if not refusing_rules(rules, p)]
    paired = {(tuple(p[n] for n in COVERED), n, p[n]) for p in admitted_grid for n in crossed}
    for r in admitted:
        key = tuple(r[n] for n in COVERED)
        for n in crossed:
            for v in sides[n]:
                if (key, n, v) in paired:
                    continue
                q = next((q for q in admitted_grid if q[n] == v and not refusing_rules(rules, {**q, **r})), None)
                if q is not None:
                    grid.append({**q, **r})
                    paired |= {(key, m, q[m]) for m in crossed}
    combos = grid + [{**defaults, **r} for r in rows] + [{**defaults, **PROBE_BASE, **p} for p in PROBES]

    # Rules: refused exactly where intended, by the intended rule.
    deployable, refused = [], 0
    seen_refusing = set()
    for params in combos:
        got = refusing_rules(rules, params)
        want = {name for name, mistaken in INTENT.items() if mistaken(params)}
        if got != want:
            problems.append(f"Rules refuse {sorted(got) or 'nothing'} where {sorted(want) or 'nothing'} was meant: {show(params)}")
        seen_refusing |= got
        if got:
            refused += 1
        else:
            deployable.append(params)
    for name in rules:
        if name not in seen_refusing:
            problems.append(f"rule {name} refuses no combination checked")

    # The covering selection covers: every admitted row is deployed with
    # each side of every other parameter (so both ends of each parameter,
    # and every pair of values the Rules admit together), and every
    # combination of the other parameters' sides is tried.
    linted = {(tuple(p[n] for n in COVERED), n, p[n]) for p in deployable for n in crossed}
    for r in admitted:
        key = tuple(r[n] for n in COVERED)
        for n in crossed:
            for v in sides[n]:
                if (key, n, v) not in linted and any(p[n] == v and not refusing_rules(rules, {**p, **r}) for p in deployable):
                    problems.append(f"covering: {show({**defaults, **r})} is never linted with {n}={v!r}")
    if len({tuple(p[n] for n in crossed) for p in grid}) != 2 ** len(crossed):
        problems.append("covering: the grid misses a combination of the other parameters")

    # Transform every deployable combination, group identical results, and
    # lint each group (split in two halves to use both cores) and the
    # template as cfn-lint itself runs it (its own transform, defaults).
    _DECODED = decoded
    _RULES = Runner(ConfigMixIn(regions=[REGION])).rules
    workers = min(2, os.cpu_count() or 1)
    with multiprocessing.get_context("fork").Pool(workers) as pool:
        digests = pool.map(_transform_digest, deployable, chunksize=64)
        groups = {}
        for params, d in zip(deployable, digests):
            groups.setdefault(d, []).append(params)
        jobs = []
        for sets in groups.values():
            half = (len(sets) + 1) // 2
            jobs += [sets[:half], sets[half:]] if len(sets) > 1 else [sets]
        findings = [f for found in pool.imap_unordered(_lint_job, jobs + [None]) for f in found]

    for what, rid, text in findings:
        if rid == "E3004":
            text = "CIRCULAR DEPENDENCY: " + text
        problems.append(f"{what}: {text}" if what else text)
        warnings += rid.startswith("W")

    seconds = time.monotonic() - STARTED
    errors = len(problems) - warnings
    print(
        f"template: {len(combos)} combinations ({len(grid)} in the grid, each with one of the {len(admitted)} admitted "
        f"settings of the {len(COVERED)} covered parameters; {len(rows)} settings of those; {len(PROBES)} probes): "
        f"{len(deployable)} deployable, transformed and linted as {len(groups)} distinct template(s); "
        f"{refused} refused by the Rules; "
        f"{sum(len(v) for v in INVALID.values())} invalid values refused by their constraints; "
        f"{errors} errors, {warnings} warnings in {seconds:.1f} s"
    )
    for p in problems[:50]:
        print(f"  {p}")
    if len(problems) > 50:
        print(f"  ... and {len(problems) - 50} more")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
