#!/usr/bin/env python3
"""Lint template.yaml for every combination of its parameters.

Each parameter has two sides: each parameter with AllowedValues at both
ends, each other parameter at its default (empty for most Strings) and a
set value. The grid is every combination of the sides of the parameters
other than the authorization ones and ToolPolicyArn (COVERED, in
GROUPS); those are combined by a covering selection rather than a
product, which would multiply the grid by 262,144 (below). A parameter that only passes a value to the
function (INERT: no Condition, Rule or Fn::If names it, which is checked)
is at its default everywhere and set in one probe. For every combination:

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

The groups. The seventeen authorization parameters fall in two GROUPS,
which share AuthIssuer, AuthAudience and AuthScopesSupported: the token
settings (nine: 512 settings) and the registration facade with the
authorization proxy (eleven: 2,048); ToolPolicyArn, which no Rule and
no other parameter's Condition names, is a group of its own (grants: 2),
so that it takes turns over the grid instead of doubling it. Every Rule, every Condition, every
Fn::If (with the Condition of the resource or output it is in) and every
reference from a resource or output with a Condition to a resource with a
Condition (with both) names covered parameters of one group only, which is
checked: so whatever the template does with some covered parameters
together, a group enumerates every setting of them. Within a group every
setting is enumerated; the groups are not multiplied: a new authorization
parameter doubles its group's settings, not the whole. A group's setting
is admitted when the Rules admit some combination of all the parameters'
sides with it: decided exactly, by a search over the sides that checks
each Rule as soon as the parameters it names have values (the Solver).

The covering selection. Each combination of the grid gets one admitted
setting of each group, in turn, the settings agreeing on the parameters
the groups share and the Rules admitting them together with the
combination whenever they admit the combination with any; so the grid keeps
its size and every combination of the other parameters that the Rules
admit is linted. A pairing of a group's admitted setting with a side of a
parameter outside the group that the grid misses, and the Rules admit, gets
a combination of its own (the search's, closest to the setting's first
combination). Each setting of each group is also tried with every other
parameter at its default, and each Rule is checked against its intent on
every setting of the parameters the two name (an intent's, as it reads
them), so that the Rules are seen refusing exactly what is meant to be
refused. The check then verifies, rather than assumes, that every admitted
setting of each group is linted with each side of every parameter outside
the group that the Rules admit with it, that every pair of values of two
parameters that the Rules admit together is linted (so every parameter at
both ends), and that every combination of the other parameters' sides is
in the grid, linted where the Rules admit it.

Also: cfn-lint's own run on template.yaml as it stands, a few rule probes
(throttling, an audience that differs from EndpointUrl), values each
AllowedPattern must refuse, and what the alarms must and must not see of
the streaming door's authorizer (check_authorizer). Any error or warning
fails the check; a circular dependency (E3004) is named as such.

Several templates. Given more than one template, each is checked so,
but a template whose checked form (everything but the functions' CodeUri,
which the transform replaces before anything is linted) is one already
checked: cmd/mcp-sam's copy of template.yaml in a module of one's own
(examples/counter/template.yaml) differs from it in comments and code
locations only. Every verdict above is a function of the checked form
(the Rules, the constraints and the transforms read nothing else), so
that check's verdicts are the copy's own: it gets cfn-lint's own run on
the file, and the digests say why the grid is not run again. A copy that
differed in anything else would get the whole check.

Usage: python3 deploy/lint_template.py [template.yaml ...]
"""

from __future__ import annotations

import collections
import copy
import hashlib
import itertools
import json
import multiprocessing
import os
import re
import sys
import time

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
    "AuthProxyClientSecretArn": "arn:aws:secretsmanager:us-east-1:123456789012:secret:mcp/proxy-client-secret-Ab12Cd",
    "ToolPolicyArn": "arn:aws:iam::123456789012:policy/mcp/counter-tools",
    "ToolSettings": "table=counter-counts,bucket=counter-exports",
}

# The authorization parameters, in groups (above): every setting of a
# group is enumerated, and the groups are combined by the covering
# selection. Every Rule, Condition and Fn::If must name covered parameters
# of one group only (checked); a group repeats a parameter that is named
# with both groups' (the settings then agree on it).
GROUPS = {
    # How the function validates a token, and anonymity.
    "tokens": ["AuthIssuer", "AllowAnonymous", "AuthAudience", "AuthJwksUrl", "AuthClientIds", "AuthScopesSupported", "AuthStepUpScopes",
               "AuthScopePrefix", "AuthAcceptedAudiences"],
    # The registration facade and the authorization proxy on it, with what
    # they are named with: the issuer (their Rules), the audience (the
    # proxy's callback output) and the scopes (the facade's metadata on the
    # streaming door).
    "servers": ["AuthIssuer", "AuthAudience", "AuthScopesSupported", "AuthRegistrationClientId", "AuthAuthorizationEndpoint", "AuthTokenEndpoint",
                "AuthRegistrationRedirectUris", "AuthProxy", "AuthProxyPreApprovedClients", "AuthProxyOmitResource", "AuthProxyClientSecretArn"],
    # The tools' own policy on the MCP function's role: named by its own
    # Condition alone (checked, as for every group), no Rule, so its two
    # settings take turns over the grid and each meets every side of every
    # other parameter (the covering's pairings), rather than doubling it.
    "grants": ["ToolPolicyArn"],
}
COVERED = list(dict.fromkeys(n for names in GROUPS.values() for n in names))

# Parameters that are only a value the function reads: no Condition, Rule
# or Fn::If names them (checked), so they cannot change the template's
# shape or what the Rules admit. They are linted at their default
# everywhere and once with their set value (a probe), not crossed with the
# others, which would double the grid for nothing.
INERT = ["Quotas", "ToolSettings"]


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
    "AuthProxyClientSecretNeedsProxy": lambda p: p["AuthProxy"] != "true" and p["AuthProxyClientSecretArn"] != "",
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
    {"ToolSettings": SET_VALUES["ToolSettings"]},
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
    # A partial ARN (no suffix: the policy would name no secret), a name,
    # wildcards (the policy would name more than one secret), another
    # service's, a short account.
    "AuthProxyClientSecretArn": ["arn:aws:secretsmanager:us-east-1:123456789012:secret:mcpproxy", "mcp/proxy-client-secret-Ab12Cd",
                                 "arn:aws:secretsmanager:us-east-1:123456789012:secret:*", "arn:aws:secretsmanager:us-east-1:123456789012:secret:mcp-??????",
                                 "arn:aws:secretsmanager:*:123456789012:secret:mcp-Ab12Cd", "arn:aws:secretsmanager:us-east-1:123456789012:secret:mcp*-Ab12Cd",
                                 "arn:aws:ssm:us-east-1:123456789012:parameter/mcp-Ab12Cd", "arn:aws:secretsmanager:us-east-1:1234:secret:mcp-Ab12Cd",
                                 " arn:aws:secretsmanager:us-east-1:123456789012:secret:mcp-Ab12Cd", "arn:aws:secretsmanager:us-east-1:123456789012:secret:mcp-Ab12C"],
    "AuthProxyPreApprovedClients": ["http://app.example.com/client.json", "https://app.example.com", "https://app.example.com/", "https://app.example.com/a/../b",
                                    "https://app.example.com/./b", "https://app.example.com/c#f", "https://a.example/c, https://b.example/c", ",", "https://a.example/c,",
                                    "https://app.example.com:443/c", 'https://app.example.com/"c', "https://app.example.com/c\\d"],
    "Quotas": ["calls=600", "calls=0/1m", "tasks=-1", "tasks=ten", "workers=3", "calls=600/1m, tasks=3", "on", ",", "tasks=10001"],
    # An AWS managed policy (broad by design: the tools' grants are yours
    # to scope), a role, a wildcard, a list, a short account.
    "ToolPolicyArn": ["arn:aws:iam::aws:policy/AmazonDynamoDBFullAccess", "arn:aws:iam::123456789012:role/tools", "arn:aws:iam::123456789012:policy/*",
                      "arn:aws:iam::123456789012:policy/a,arn:aws:iam::123456789012:policy/b", "arn:aws:iam::1234:policy/tools", "tools"],
    # A control character, a non-ASCII one, more than 1024.
    "ToolSettings": ["table=a\nbucket=b", "table=caf\u00e9", "x" * 1025],
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
    if "MaxLength" in spec and len(value) > int(spec["MaxLength"]):
        return "longer than MaxLength"
    if "MinLength" in spec and len(value) < int(spec["MinLength"]):
        return "shorter than MinLength"
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


def compile_expr(expr, names):
    """A Rules expression as a function of the parameter values; the
    parameters it names are added to names."""
    if isinstance(expr, bool):
        return lambda p: expr
    if isinstance(expr, (str, int, float)):
        s = str(expr)
        return lambda p: s
    if isinstance(expr, list):
        fs = [compile_expr(e, names) for e in expr]
        return lambda p: [f(p) for f in fs]
    if not isinstance(expr, dict) or len(expr) != 1:
        raise ValueError(f"cannot evaluate {expr!r}")
    (fn, arg), = expr.items()
    if fn == "Ref":
        names.add(arg)
        return lambda p: p[arg]
    if fn == "Fn::Equals":
        a, b = (compile_expr(x, names) for x in arg)
        return lambda p: a(p) == b(p)
    if fn == "Fn::Not":
        f = compile_expr(arg[0], names)
        return lambda p: not f(p)
    if fn in ("Fn::And", "Fn::Or"):
        fs = [compile_expr(x, names) for x in arg]
        if fn == "Fn::And":
            return lambda p: all(f(p) for f in fs)
        return lambda p: any(f(p) for f in fs)
    if fn == "Fn::Contains":
        within, x = compile_expr(arg[0], names), compile_expr(arg[1], names)
        return lambda p: x(p) in within(p)
    raise ValueError(f"{fn} is not evaluated by this check: extend compile_expr()")


def compile_rules(rules):
    """Each Rule as (name, the parameters it names, whether it refuses
    given parameter values)."""
    out = []
    for name, rule in rules.items():
        names = set()
        cond = compile_expr(rule["RuleCondition"], names) if "RuleCondition" in rule else (lambda p: True)
        asserts = [compile_expr(a["Assert"], names) for a in rule["Assertions"]]
        out.append((name, frozenset(names), lambda p, cond=cond, asserts=asserts: bool(cond(p)) and not all(f(p) for f in asserts)))
    return out


def refusing_rules(compiled, params):
    """The names of the Rules whose assertions fail for params."""
    return {name for name, _, refuses in compiled if refuses(params)}


class _Reads(dict):
    """Parameter values that note which are read."""

    def __init__(self, values, read):
        super().__init__(values)
        self.read = read

    def __getitem__(self, key):
        self.read.add(key)
        return super().__getitem__(key)


def intent_names(mistaken, sides, defaults):
    """The parameters an intent reads: those it reads at the defaults, then
    under every setting of those found so far, until no more. Sound over
    the sides: an evaluation that reads only these under each of their
    settings reads only these whatever the others are."""
    read, tried = set(), None
    while read != tried:
        tried = set(read)
        names = sorted(tried)
        for vals in itertools.product(*(sides[n] for n in names)):
            mistaken(_Reads({**defaults, **dict(zip(names, vals))}, read))
    return read


class Solver:
    """Whether the Rules admit a combination with the given values, every
    other parameter of names at one of its sides; and such a combination.

    Exact: a depth-first search over the sides, the parameters most named
    by the Rules first, each Rule checked as soon as the parameters it names
    have values. What is left of the search at a step depends only on the
    values of the parameters a Rule names with one still to come (the
    frontier), so a frontier found to fail (or, when only admissibility is
    asked, to succeed) is not searched again."""

    def __init__(self, compiled, names, sides, defaults):
        self.rules = [(params, refuses) for _, params, refuses in compiled]
        degree = collections.Counter(n for params, _ in self.rules for n in params)
        self.order = sorted(names, key=lambda n: -degree[n])
        self.sides, self.defaults = sides, defaults
        self.plans = {}

    def _plan(self, fixed):
        key = frozenset(fixed)
        plan = self.plans.get(key)
        if plan is None:
            free = [n for n in self.order if n not in key]
            pos = {n: i for i, n in enumerate(free)}
            checks = [[] for _ in range(len(free) + 1)]
            for params, refuses in self.rules:
                checks[max((pos[n] + 1 for n in params if n in pos), default=0)].append(refuses)
            frontier = []
            for i in range(len(free) + 1):
                later = set(free[i:])
                frontier.append(sorted({n for params, _ in self.rules if params & later for n in params if n not in later}))
            plan = self.plans[key] = (free, checks, frontier, set(), set())
        return plan

    def _search(self, fixed, prefer, values):
        free, checks, frontier, failed, succeeded = self._plan(fixed)
        p = {**self.defaults, **fixed}
        if any(refuses(p) for refuses in checks[0]):
            return None
        path = []

        def search(i):
            if i == len(free):
                return True
            state = (i, tuple(p[n] for n in frontier[i]))
            if state in failed:
                return False
            if not values and state in succeeded:
                return True
            n = free[i]
            first = prefer.get(n, self.defaults[n])
            for v in sorted(self.sides[n], key=lambda v: v != first):
                p[n] = v
                if not any(refuses(p) for refuses in checks[i + 1]) and search(i + 1):
                    path.append(state)
                    return True
            failed.add(state)
            return False

        if not search(0):
            return None
        succeeded.update(path)
        return p

    def admissible(self, fixed):
        """Whether the Rules admit some combination with the values fixed."""
        return self._search(fixed, {}, False) is not None

    def complete(self, fixed, prefer):
        """A combination the Rules admit with the values fixed, the others
        at prefer's values where the Rules allow (else their defaults), or
        None."""
        return self._search(fixed, prefer, True)


def _named(node, params, conditions, out):
    """Adds to out the parameters node names: by Ref, in a Fn::Sub's
    string, and through the Conditions it names (Condition, Fn::If)."""
    if isinstance(node, dict):
        if len(node) == 1:
            (k, v), = node.items()
            if k == "Ref" and v in params:
                out.add(v)
                return out
            if k == "Condition" and isinstance(v, str) and v in conditions:
                return _named(conditions[v], params, conditions, out)
            if k == "Fn::If" and isinstance(v, list) and v and v[0] in conditions:
                _named(conditions[v[0]], params, conditions, out)
                return _named(v[1:], params, conditions, out)
            if k == "Fn::Sub":
                s, defined = (v, {}) if isinstance(v, str) else (v[0], v[1])
                out.update(x for x in re.findall(r"\$\{([^!}.]+)\}", s) if x in params and x not in defined)
                return _named(defined, params, conditions, out)
        for v in node.values():
            _named(v, params, conditions, out)
    elif isinstance(node, list):
        for v in node:
            _named(v, params, conditions, out)
    return out


def _targets(node, resources, out):
    """Adds to out the resources node refers to (Ref, Fn::GetAtt, Fn::Sub)."""
    if isinstance(node, dict):
        for k, v in node.items():
            if k == "Ref" and isinstance(v, str) and v in resources:
                out.add(v)
            elif k == "Fn::GetAtt":
                out.add((v if isinstance(v, list) else v.split("."))[0])
            elif k == "Fn::Sub":
                s = v if isinstance(v, str) else v[0]
                out.update(x.split(".")[0] for x in re.findall(r"\$\{([^!}]+)\}", s) if x.split(".")[0] in resources)
            _targets(v, resources, out)
    elif isinstance(node, list):
        for v in node:
            _targets(v, resources, out)
    return out


def scopes(sam):
    """What the template names together, as (where, parameters): each Rule;
    each Condition (through the Conditions it names); each Fn::If, with
    the Condition of the resource or output it is in; and each reference
    (or DependsOn) from a resource or output with a Condition to a resource
    with a Condition, with both Conditions."""
    params, conditions, resources = sam.get("Parameters", {}), sam.get("Conditions", {}), sam.get("Resources", {})
    out = [(f"Rule {n}", _named(r, params, conditions, set())) for n, r in sam.get("Rules", {}).items()]
    out += [(f"Condition {n}", _named({"Condition": n}, params, conditions, set())) for n in conditions]
    for section in ("Resources", "Outputs"):
        for name, r in sam.get(section, {}).items():
            own = _named({"Condition": r["Condition"]}, params, conditions, set()) if "Condition" in r else set()
            out += [(f"an Fn::If in {name}", own | _named({"Fn::If": v}, params, conditions, set())) for v in _fn_ifs(r)]
            deps = r.get("DependsOn", [])
            for t in sorted(_targets(r, resources, set()) | set([deps] if isinstance(deps, str) else deps)):
                if own and "Condition" in resources.get(t, {}):
                    out.append((f"{name}'s reference to {t}", own | _named({"Condition": resources[t]["Condition"]}, params, conditions, set())))
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


def checked_form(sam):
    """What the check reads of a template: all of it but the functions'
    CodeUri, which transform replaces (as sam build does) before anything
    is linted, as a digest. Two templates with the same checked form get
    the same verdict for every combination."""
    src = copy.deepcopy(sam)
    for res in src.get("Resources", {}).values():
        if isinstance(res, dict) and res.get("Type") == "AWS::Serverless::Function":
            res.get("Properties", {}).pop("CodeUri", None)
    return digest(src)


def main():
    """Each template named (template.yaml when none is): the whole check
    for the first of each checked form; for a template whose checked form
    is one already checked (a generated copy of template.yaml, which
    differs in comments and code locations only), that check's verdicts,
    which are its own, and cfn-lint's own run on the file."""
    global _RULES
    paths = sys.argv[1:] or [os.path.join(os.path.dirname(__file__), "..", "template.yaml")]
    checked = {}
    status = 0
    for path in paths:
        started = time.monotonic()
        decoded, errs = decode(path)
        if errs:
            for e in errs:
                print(f"template: {path}: {e.rule.id} {e.message} (line {e.linenumber})")
            status = 1
            continue
        form = checked_form(plain(decoded))
        if form not in checked:
            checked[form] = path
            status |= check(path, decoded)
            continue
        if _RULES is None:
            _RULES = Runner(ConfigMixIn(regions=[REGION])).rules
        found = lint(decoded)
        warnings = sum(rid.startswith("W") for rid, _ in found)
        print(f"template: {path}: {checked[form]} but for comments and the functions' CodeUri (checked form sha256 {form[:12]}): "
              f"that check's verdicts, above, are this template's; cfn-lint's own run on it: "
              f"{len(found) - warnings} errors, {warnings} warnings in {time.monotonic() - started:.1f} s")
        for _, text in found:
            print(f"  {text}")
        status |= 1 if found else 0
    return status


def check(path, decoded):
    """The whole check of one template; 0 when it passes."""
    global _SAM, _DECODED, _RULES
    started = time.monotonic()
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
            problems.append(f"GROUPS name {name}, which the template does not declare")
    shaping = json.dumps([sam.get("Conditions", {}), rules, [v for v in _fn_ifs(sam)]])
    for name in INERT:
        if name not in specs:
            problems.append(f"INERT names {name}, which the template does not declare")
        elif json.dumps({"Ref": name}) in shaping:
            problems.append(f"INERT names {name}, which a Condition, a Rule or an Fn::If names: it can change the template's shape")
    if set(INTENT) != set(rules):
        problems.append(f"Rules {sorted(rules)} and the intent table {sorted(INTENT)} differ")
    # The groups hold whatever the template names together.
    for where, named in scopes(sam):
        covered = named & set(COVERED)
        if covered and not any(covered <= set(g) for g in GROUPS.values()):
            problems.append(f"GROUPS: {where} names {sorted(covered)} together, which no group holds: add them to one")
    problems += check_authorizer(sam)
    if problems:
        print("\n".join(f"template: {path}: {p}" for p in problems))
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
    free = [n for n in names if n not in INERT]
    compiled = compile_rules(rules)
    solver = Solver(compiled, free, sides, defaults)

    # Each Rule against its intent, on every setting of what the two name.
    rule_settings = 0
    for name, named, refuses in compiled:
        scope = sorted(named | intent_names(INTENT[name], sides, defaults))
        for vals in itertools.product(*(sides[n] for n in scope)):
            p = {**defaults, **dict(zip(scope, vals))}
            rule_settings += 1
            if refuses(p) != bool(INTENT[name](p)):
                problems.append(f"rule {name} {'refuses' if refuses(p) else 'admits'} what its intent does not: {show(p)}")

    # Every setting of each group, and those the Rules admit with some
    # values of the other parameters.
    settings = {g: [dict(zip(ps, vals)) for vals in itertools.product(*(sides[n] for n in ps))] for g, ps in GROUPS.items()}
    admitted = {g: [s for s in settings[g] if solver.admissible(s)] for g in GROUPS}
    for g, a in admitted.items():
        if not a:
            problems.append(f"the Rules admit no setting of the group {g}: " + ", ".join(GROUPS[g]))
    if problems:
        print("\n".join(f"template: {path}: {p}" for p in problems))
        return 1

    def agrees(s, fixed):
        return all(fixed.get(n, v) == v for n, v in s.items())

    # The grid: each combination of the other parameters' sides with one
    # admitted setting of each group, in turn (the least used so far, then
    # the next after the last one picked), agreeing with the settings
    # before it and, where the Rules admit the combination at all, admitted
    # with it.
    uses = {g: [0] * len(admitted[g]) for g in GROUPS}
    turn = dict.fromkeys(GROUPS, 0)
    grid = []
    for vals in itertools.product(*(sides[n] for n in crossed)):
        fixed = dict(zip(crossed, vals))
        possible = solver.admissible(fixed)
        for g in GROUPS:
            cands, s, count = admitted[g], None, len(admitted[g])
            for j in sorted(range(count), key=lambda j: (uses[g][j], (j - turn[g]) % count)):
                if agrees(cands[j], fixed) and (not possible or solver.admissible({**fixed, **cands[j]})):
                    s = cands[j]
                    if possible:
                        uses[g][j] += 1
                        turn[g] = j + 1
                    break
            if s is None:  # refused whatever: a setting that agrees
                s = next(s for s in settings[g] if agrees(s, fixed))
            fixed.update(s)
        grid.append({**defaults, **fixed})

    # A pairing the turns miss, of a group's admitted setting with a side
    # of a parameter outside the group, that the Rules admit: a
    # combination of its own, as close to the setting's first as the Rules
    # allow.
    outside = {g: [n for n in free if n not in ps] for g, ps in GROUPS.items()}

    def group_keys(p):
        return [(g, tuple(p[n] for n in ps)) for g, ps in GROUPS.items()]

    paired, first = set(), {}

    def note(p):
        for key in group_keys(p):
            first.setdefault(key, p)
            paired.update((key, n, p[n]) for n in outside[key[0]])

    for p in grid:
        if not refusing_rules(compiled, p):
            note(p)
    pairings = []
    for g, ps in GROUPS.items():
        for s in admitted[g]:
            key = (g, tuple(s[n] for n in ps))
            for n in outside[g]:
                for v in sides[n]:
                    if (key, n, v) not in paired and solver.admissible({**s, n: v}):
                        q = solver.complete({**s, n: v}, first.get(key, defaults))
                        pairings.append(q)
                        note(q)
    alone = [{**defaults, **s} for g in GROUPS for s in settings[g]]
    combos = grid + pairings + alone + [{**defaults, **PROBE_BASE, **p} for p in PROBES]

    # Rules: refused exactly where intended, by the intended rule.
    deployable, refused = [], 0
    seen_refusing = set()
    for params in combos:
        got = refusing_rules(compiled, params)
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

    # The covering selection covers, as verified on what is linted: every
    # admitted setting of each group with each side of every parameter
    # outside it that the Rules admit with it; every pair of values of two
    # parameters that the Rules admit together (so each parameter at both
    # ends); every combination of the other parameters' sides in the grid,
    # and linted where the Rules admit it.
    linted, pairs, ends, others = set(), set(), set(), set()
    for p in deployable:
        for key in group_keys(p):
            linted.add(key)
            linted.update((key, n, p[n]) for n in outside[key[0]])
        values = [(n, p[n]) for n in free]
        ends.update(values)
        pairs.update(itertools.combinations(values, 2))
        others.add(tuple(p[n] for n in crossed))
    for g, ps in GROUPS.items():
        for s in admitted[g]:
            key = (g, tuple(s[n] for n in ps))
            if key not in linted:
                problems.append(f"covering: the {g} setting {show({**defaults, **s})} is never linted")
                continue
            for n in outside[g]:
                for v in sides[n]:
                    if (key, n, v) not in linted and solver.admissible({**s, n: v}):
                        problems.append(f"covering: the {g} setting {show({**defaults, **s})} is never linted with {n}={v!r}")
    for i, a in enumerate(free):
        for v in sides[a]:
            if (a, v) not in ends and solver.admissible({a: v}):
                problems.append(f"covering: {a}={v!r} is never linted")
            for b in free[i + 1:]:
                for w in sides[b]:
                    if ((a, v), (b, w)) not in pairs and solver.admissible({a: v, b: w}):
                        problems.append(f"covering: {a}={v!r} is never linted with {b}={w!r}")
    in_grid = {tuple(p[n] for n in crossed) for p in grid}
    if len(in_grid) != 2 ** len(crossed):
        problems.append("covering: the grid misses a combination of the other parameters")
    for vals in in_grid - others:
        if solver.admissible(dict(zip(crossed, vals))):
            problems.append(f"covering: {show({**defaults, **dict(zip(crossed, vals))})} is admitted by the Rules and never linted")

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

    seconds = time.monotonic() - started
    errors = len(problems) - warnings
    print(
        f"template: {path}: {len(combos)} combinations ({len(grid)} in the grid and {len(pairings)} for pairings, each with one admitted setting of each "
        f"group of the {len(COVERED)} covered parameters ("
        + ", ".join(f"{g}: {len(admitted[g])} of {len(settings[g])}" for g in GROUPS)
        + f"); the {len(alone)} settings of the groups alone; {len(PROBES)} probes): "
        f"{len(deployable)} deployable, transformed and linted as {len(groups)} distinct template(s); "
        f"{refused} refused by the Rules; each of the {len(compiled)} Rules against its intent ({rule_settings} settings); "
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
