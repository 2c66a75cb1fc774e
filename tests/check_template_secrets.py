#!/usr/bin/env python3
"""The secrets the function's role may read, as deployed with given parameter values.

    python3 tests/check_template_secrets.py TRANSFORMED.json [Name=Value ...]

Reads the SAM template after the offline transform (scripts/sam_transform.py), takes each
parameter's default unless given here, resolves the template's conditions and `Fn::If`s the way
CloudFormation would for those values, and checks least privilege on secrets:
  - every `secretsmanager:GetSecretValue` statement of the function's role names secrets by ARN,
    never `*` or a wildcard, and only secrets a parameter names;
  - the secrets `SubagentSecretArns` lists are readable, in a statement of their own, exactly
    when it is set;
  - `AGENT_PROFILES` and `AGENT_DEFAULT_PROFILE` reach the function's environment when set.
Prints what it found; exits non-zero naming what is wrong.
"""

from __future__ import annotations

import json
import sys

SECRET_PARAMETERS = (
    "OpenAIApiKeySecretArn",
    "AnthropicApiKeySecretArn",
    "GeminiApiKeySecretArn",
    "ApiKeysSecretArn",
    "McpHeadersSecretArns",
    "SubagentSecretArns",
)


class Resolver:
    """CloudFormation's intrinsic functions, as far as conditions and policies use them."""

    def __init__(self, template: dict, values: dict[str, str]) -> None:
        self.parameters: dict[str, object] = {}
        for name, spec in template.get("Parameters", {}).items():
            value = values.get(name, str(spec.get("Default", "")))
            if spec.get("Type") == "CommaDelimitedList":
                self.parameters[name] = value.split(",") if value else [""]
            else:
                self.parameters[name] = value
        self.pseudo = {
            "AWS::Region": "us-east-1",
            "AWS::AccountId": "123456789012",
            "AWS::Partition": "aws",
            "AWS::StackName": "agui",
            "AWS::URLSuffix": "amazonaws.com",
            "AWS::NoValue": None,
        }
        self.conditions = template.get("Conditions", {})
        self.decided: dict[str, bool] = {}

    def condition(self, name: str) -> bool:
        if name not in self.decided:
            self.decided[name] = bool(self.value(self.conditions[name]))
        return self.decided[name]

    def value(self, node: object) -> object:
        if isinstance(node, list):
            return [item for item in (self.value(item) for item in node) if item is not None]
        if not isinstance(node, dict):
            return node
        if len(node) == 1:
            (key, argument), = node.items()
            if key == "Ref":
                if argument in self.pseudo:
                    return self.pseudo[argument]
                return self.parameters.get(argument, {"Ref": argument})
            if key == "Condition":
                return self.condition(argument)
            if key == "Fn::If":
                name, then, otherwise = argument
                return self.value(then if self.condition(name) else otherwise)
            if key == "Fn::Equals":
                left, right = (self.value(item) for item in argument)
                return left == right
            if key == "Fn::Not":
                return not self.value(argument[0])
            if key == "Fn::And":
                return all(self.value(item) for item in argument)
            if key == "Fn::Or":
                return any(self.value(item) for item in argument)
            if key == "Fn::Join":
                separator, items = argument
                return separator.join(str(item) for item in self.value(items))
            if key == "Fn::Split":
                separator, text = argument
                return str(self.value(text)).split(separator)
            if key == "Fn::Select":
                index, items = argument
                return self.value(items)[int(index)]
        return {key: self.value(item) for key, item in node.items() if self.value(item) is not None}


def secret_statements(template: dict, resolver: Resolver) -> list[dict]:
    role = template["Resources"]["AguiFunctionRole"]["Properties"]
    statements = []
    for policy in resolver.value(role.get("Policies", [])):
        for statement in policy["PolicyDocument"]["Statement"]:
            actions = statement.get("Action")
            actions = actions if isinstance(actions, list) else [actions]
            if any(str(action).startswith("secretsmanager:") for action in actions):
                statements.append(statement)
    return statements


def problems(template: dict, values: dict[str, str]) -> tuple[list[str], str]:
    resolver = Resolver(template, values)
    named: set[str] = set()
    for parameter in SECRET_PARAMETERS:
        value = resolver.parameters.get(parameter, "")
        named.update(item for item in (value if isinstance(value, list) else [value]) if item)
    wrong: list[str] = []
    readable: dict[str, set[str]] = {}
    for statement in secret_statements(template, resolver):
        resources = statement.get("Resource")
        resources = resources if isinstance(resources, list) else [resources]
        readable[statement.get("Sid", "?")] = set(map(str, resources))
        for resource in map(str, resources):
            if "*" in resource or resource not in named:
                wrong.append(f"{statement.get('Sid')}: may read {resource!r}, which no parameter names")
    subagent = {arn for arn in resolver.parameters["SubagentSecretArns"] if arn}
    granted = readable.get("SubagentSecretsOnly", set())
    if granted != subagent:
        wrong.append(f"SubagentSecretsOnly grants {sorted(granted)}; SubagentSecretArns is {sorted(subagent)}")
    environment = resolver.value(template["Resources"]["AguiFunction"]["Properties"]["Environment"])
    variables = environment.get("Variables", {})
    for setting, parameter in (("AGENT_PROFILES", "AgentProfiles"), ("AGENT_DEFAULT_PROFILE", "AgentDefaultProfile")):
        given = resolver.parameters[parameter]
        if variables.get(setting, "") != given:
            wrong.append(f"{setting} is {variables.get(setting)!r}, {parameter} is {given!r}")
    summary = "; ".join(f"{sid}: {', '.join(sorted(resources))}" for sid, resources in readable.items())
    return wrong, summary or "no secret"


def main(argv: list[str]) -> int:
    if not argv:
        print(__doc__)
        return 2
    with open(argv[0], encoding="utf-8") as handle:
        template = json.load(handle)
    values = dict(pair.split("=", 1) for pair in argv[1:])
    wrong, summary = problems(template, values)
    print(f"template secrets with {', '.join(values) or 'the defaults'}: {summary}")
    for problem in wrong:
        print(f"FAILED {problem}")
    return 1 if wrong else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
