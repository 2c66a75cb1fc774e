//! The thread store's DynamoDB client: region, credentials and endpoint from the standard AWS
//! configuration. An endpoint on loopback (DynamoDB Local) with no credentials or region of its
//! own gets local placeholders, so development needs no AWS account and never asks the instance
//! metadata service; anywhere else, what is missing is named before the first call.

use aws_credential_types::Credentials;
use aws_credential_types::provider::ProvideCredentials;
use aws_sdk_dynamodb::Client;
use std::time::Duration;

/// What `THREADS_TABLE` cannot work without, and the settings that give it.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub(crate) enum ClientError {
    #[error(
        "THREADS_TABLE={table} needs an AWS region: set AWS_REGION (or AWS_PROFILE with a \
         region). For a local table set AWS_ENDPOINT_URL_DYNAMODB=http://127.0.0.1:8000 instead \
         (bash scripts/dynamodb-local.sh starts DynamoDB Local there)"
    )]
    NoRegion { table: String },
    #[error(
        "THREADS_TABLE={table} needs AWS credentials: set AWS_ACCESS_KEY_ID and \
         AWS_SECRET_ACCESS_KEY, or AWS_PROFILE ({reason}). For a local table set \
         AWS_ENDPOINT_URL_DYNAMODB=http://127.0.0.1:8000 instead (bash scripts/dynamodb-local.sh \
         starts DynamoDB Local there)"
    )]
    NoCredentials { table: String, reason: String },
}

/// The AWS settings the client is built from, as the process environment gives them.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct AwsEnvironment {
    /// `AWS_ENDPOINT_URL_DYNAMODB`, else `AWS_ENDPOINT_URL`.
    pub endpoint: Option<String>,
    /// `AWS_ACCESS_KEY_ID` or `AWS_PROFILE` is set.
    pub credentials: bool,
    /// `AWS_REGION` or `AWS_DEFAULT_REGION` is set.
    pub region: bool,
}

impl AwsEnvironment {
    pub(crate) fn from_process() -> Self {
        let set = |name: &str| std::env::var(name).is_ok_and(|value| !value.trim().is_empty());
        Self {
            endpoint: ["AWS_ENDPOINT_URL_DYNAMODB", "AWS_ENDPOINT_URL"]
                .iter()
                .find_map(|name| std::env::var(name).ok())
                .filter(|url| !url.trim().is_empty()),
            credentials: set("AWS_ACCESS_KEY_ID") || set("AWS_PROFILE"),
            region: set("AWS_REGION") || set("AWS_DEFAULT_REGION"),
        }
    }

    /// DynamoDB Local on this machine: an endpoint whose host is loopback.
    pub(crate) fn is_local(&self) -> bool {
        self.endpoint
            .as_deref()
            .and_then(|url| reqwest::Url::parse(url).ok())
            .and_then(|url| url.host_str().map(str::to_owned))
            .is_some_and(|host| {
                let host = host.trim_start_matches('[').trim_end_matches(']');
                host == "localhost"
                    || host
                        .parse::<std::net::IpAddr>()
                        .is_ok_and(|ip| ip.is_loopback())
            })
    }
}

/// The client for `table`, its calls bounded so a store that is down answers 503 in seconds
/// instead of hanging a run. With `check`, the region and credentials a table on AWS needs are
/// asked for first, and named when missing (locally; under Lambda both come with the function).
pub(crate) async fn connect(
    table: &str,
    environment: &AwsEnvironment,
    check: bool,
) -> Result<Client, ClientError> {
    let aws = sdk_config(environment).await;
    if check {
        check_settings(&aws, table).await?;
    }
    Ok(Client::new(&aws))
}

async fn sdk_config(environment: &AwsEnvironment) -> aws_config::SdkConfig {
    let timeouts = aws_config::timeout::TimeoutConfig::builder()
        .connect_timeout(Duration::from_secs(2))
        .operation_attempt_timeout(Duration::from_secs(5))
        .operation_timeout(Duration::from_secs(12))
        .build();
    let mut loader =
        aws_config::defaults(aws_config::BehaviorVersion::latest()).timeout_config(timeouts);
    if environment.is_local() {
        // DynamoDB Local checks that a request is signed, not by whom.
        if !environment.credentials {
            loader = loader.credentials_provider(Credentials::new(
                "local",
                "local",
                None,
                None,
                "dynamodb-local",
            ));
        }
        if !environment.region {
            loader = loader.region(aws_config::Region::from_static("us-east-1"));
        }
    }
    loader.load().await
}

async fn check_settings(aws: &aws_config::SdkConfig, table: &str) -> Result<(), ClientError> {
    if aws.region().is_none() {
        return Err(ClientError::NoRegion {
            table: table.to_owned(),
        });
    }
    let Some(provider) = aws.credentials_provider() else {
        return Err(ClientError::NoCredentials {
            table: table.to_owned(),
            reason: "no credentials provider".to_owned(),
        });
    };
    match provider.provide_credentials().await {
        Ok(_) => Ok(()),
        Err(error) => Err(ClientError::NoCredentials {
            table: table.to_owned(),
            reason: error.to_string(),
        }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(endpoint: &str) -> AwsEnvironment {
        AwsEnvironment {
            endpoint: Some(endpoint.to_owned()),
            ..AwsEnvironment::default()
        }
    }

    #[test]
    fn a_loopback_endpoint_is_dynamodb_local() {
        assert!(at("http://127.0.0.1:8000").is_local());
        assert!(at("http://localhost:8000/").is_local());
        assert!(at("http://[::1]:8000").is_local());
        assert!(!at("https://dynamodb.eu-west-1.amazonaws.com").is_local());
        assert!(!at("http://10.0.0.5:8000").is_local());
        assert!(!AwsEnvironment::default().is_local());
    }

    #[tokio::test]
    async fn dynamodb_local_needs_no_aws_settings() {
        let aws = sdk_config(&at("http://127.0.0.1:8000")).await;
        assert_eq!(
            aws.region().map(ToString::to_string).as_deref(),
            Some("us-east-1")
        );
        assert_eq!(check_settings(&aws, "threads").await, Ok(()));
    }

    #[test]
    fn a_table_without_aws_settings_names_what_to_set() {
        let error = ClientError::NoRegion {
            table: "threads".to_owned(),
        };
        assert_eq!(
            error.to_string(),
            "THREADS_TABLE=threads needs an AWS region: set AWS_REGION (or AWS_PROFILE with a \
             region). For a local table set AWS_ENDPOINT_URL_DYNAMODB=http://127.0.0.1:8000 \
             instead (bash scripts/dynamodb-local.sh starts DynamoDB Local there)"
        );
    }
}
