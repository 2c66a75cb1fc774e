#!/usr/bin/env python3
"""Offline SAM transform: sam_transform.py template.yaml > transformed.json

Needs only `aws-sam-translator` (PyPI). No AWS credentials, no network:
- region and pseudo parameters come from a fixed dummy region (AWS_DEFAULT_REGION),
- the managed-policy map is a fixed dict (SAM policy templates such as
  DynamoDBCrudPolicy need no lookup; only bare managed-policy *names* do),
- local CodeUri/ContentUri paths are replaced by a dummy S3 URI, as
  `sam build`/`sam package` would do before deploying.
"""
import json
import os
import sys

os.environ.setdefault("AWS_DEFAULT_REGION", "us-east-1")

from samtranslator.parser.parser import Parser  # noqa: E402
from samtranslator.public.exceptions import InvalidDocumentException  # noqa: E402
from samtranslator.translator.translator import Translator  # noqa: E402
from samtranslator.yaml_helper import yaml_parse  # noqa: E402

MANAGED_POLICIES = {
    "AWSLambdaBasicExecutionRole": "arn:aws:iam::aws:policy/service-role/AWSLambdaBasicExecutionRole",
    "AWSXrayWriteOnlyAccess": "arn:aws:iam::aws:policy/AWSXrayWriteOnlyAccess",
    "AWSXRayDaemonWriteAccess": "arn:aws:iam::aws:policy/AWSXRayDaemonWriteAccess",
}


def _dummy_code_uris(template):
    for res in (template.get("Resources") or {}).values():
        if not isinstance(res, dict):
            continue
        props = res.get("Properties") or {}
        t = res.get("Type")
        if t == "AWS::Serverless::Function" and isinstance(props.get("CodeUri", "."), str):
            if not str(props.get("CodeUri", ".")).startswith("s3://") and "ImageUri" not in props and "InlineCode" not in props:
                props["CodeUri"] = "s3://dummy-bucket/code.zip"
        if t == "AWS::Serverless::LayerVersion" and isinstance(props.get("ContentUri"), str):
            if not props["ContentUri"].startswith("s3://"):
                props["ContentUri"] = "s3://dummy-bucket/layer.zip"


def main(path):
    with open(path) as f:
        template = yaml_parse(f.read())
    _dummy_code_uris(template)
    try:
        out = Translator(MANAGED_POLICIES, Parser()).translate(
            sam_template=template,
            parameter_values={},
            get_managed_policy_map=lambda: MANAGED_POLICIES,
        )
    except InvalidDocumentException as e:
        for cause in e.causes:
            print(f"SAM transform error: {cause.message}", file=sys.stderr)
        return 1
    json.dump(out, sys.stdout, indent=1, default=str)
    print()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))
