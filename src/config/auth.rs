//! The auth section: how callers prove who they are (`AUTH_MODE`) and what each mode needs.

use super::vars::Vars;
use super::{ConfigError, Section};
use secrecy::SecretString;

/// How callers prove who they are (`AUTH_MODE`).
#[derive(Debug, Clone)]
pub enum AuthConfig {
    /// Local development: every caller is `anonymous`.
    None,
    /// `Authorization: Bearer <key>`; keys given as SHA-256 hashes per principal.
    ApiKey {
        /// `API_KEYS`: `principal=<sha256 hex>,…`
        keys: Option<SecretString>,
        /// `API_KEYS_SECRET_ID`: a Secrets Manager secret holding the same, read at cold start.
        secret_id: Option<String>,
    },
    /// OIDC / Cognito bearer tokens.
    Jwt {
        issuer: String,
        audience: String,
        jwks: JwksSource,
        leeway_secs: u64,
    },
    /// A Function URL with `AuthType: AWS_IAM`; the caller comes from the request context.
    Iam,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum JwksSource {
    Url(String),
    File(std::path::PathBuf),
}

impl Section for AuthConfig {
    const SETTINGS: &'static [&'static str] = &[
        "AUTH_MODE",
        "API_KEYS",
        "API_KEYS_SECRET_ID",
        "JWT_ISSUER",
        "JWT_AUDIENCE",
        "JWT_JWKS_URL",
        "JWT_JWKS_FILE",
        "JWT_LEEWAY_SECS",
    ];

    fn from_vars(vars: &Vars) -> Result<Self, ConfigError> {
        match vars.text("AUTH_MODE").as_deref() {
            None | Some("none") => Ok(Self::None),
            Some("api-key") => api_key(vars),
            Some("jwt") => jwt(vars),
            Some("iam") => Ok(Self::Iam),
            Some(other) => Err(ConfigError::Invalid {
                name: "AUTH_MODE",
                expected: "none, api-key, jwt or iam",
                value: other.to_owned(),
            }),
        }
    }
}

fn api_key(vars: &Vars) -> Result<AuthConfig, ConfigError> {
    let keys = vars.text("API_KEYS").map(SecretString::from);
    let secret_id = vars.text("API_KEYS_SECRET_ID");
    if keys.is_none() && secret_id.is_none() {
        return Err(ConfigError::Missing {
            mode: "api-key",
            needs: "API_KEYS or API_KEYS_SECRET_ID",
        });
    }
    Ok(AuthConfig::ApiKey { keys, secret_id })
}

fn jwt(vars: &Vars) -> Result<AuthConfig, ConfigError> {
    let missing = ConfigError::Missing {
        mode: "jwt",
        needs: "JWT_ISSUER, JWT_AUDIENCE and JWT_JWKS_URL or JWT_JWKS_FILE",
    };
    let jwks = match (vars.text("JWT_JWKS_URL"), vars.text("JWT_JWKS_FILE")) {
        (Some(url), _) => JwksSource::Url(url),
        (None, Some(file)) => JwksSource::File(file.into()),
        (None, None) => return Err(missing),
    };
    Ok(AuthConfig::Jwt {
        issuer: vars.text("JWT_ISSUER").ok_or(missing.clone())?,
        audience: vars.text("JWT_AUDIENCE").ok_or(missing)?,
        jwks,
        leeway_secs: vars.bounded("JWT_LEEWAY_SECS", 30, 0..=3_600)?,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::tests::config;

    #[test]
    fn auth_modes_need_their_settings() {
        assert!(matches!(config(&[]).unwrap().auth, AuthConfig::None));
        assert!(matches!(
            config(&[("AUTH_MODE", "api-key")]),
            Err(ConfigError::Missing { .. })
        ));
        assert!(matches!(
            config(&[("AUTH_MODE", "api-key"), ("API_KEYS", "a=b")])
                .unwrap()
                .auth,
            AuthConfig::ApiKey { .. }
        ));
        assert!(matches!(
            config(&[("AUTH_MODE", "jwt"), ("JWT_ISSUER", "i")]),
            Err(ConfigError::Missing { .. })
        ));
        let jwt = config(&[
            ("AUTH_MODE", "jwt"),
            ("JWT_ISSUER", "i"),
            ("JWT_AUDIENCE", "a"),
            ("JWT_JWKS_FILE", "/k.json"),
        ])
        .unwrap();
        assert!(matches!(
            jwt.auth,
            AuthConfig::Jwt {
                leeway_secs: 30,
                ..
            }
        ));
        assert!(config(&[("AUTH_MODE", "magic")]).is_err());
        let cors = config(&[(
            "CORS_ALLOWED_ORIGINS",
            "https://a.example/, http://localhost:3000",
        )])
        .unwrap();
        assert_eq!(
            cors.http.cors_allowed_origins,
            ["https://a.example", "http://localhost:3000"]
        );
    }

    #[test]
    fn jwt_leeway_is_bounded() {
        let err = config(&[
            ("AUTH_MODE", "jwt"),
            ("JWT_ISSUER", "i"),
            ("JWT_AUDIENCE", "a"),
            ("JWT_JWKS_FILE", "/k.json"),
            ("JWT_LEEWAY_SECS", "86400"),
        ])
        .unwrap_err();
        assert!(err.to_string().starts_with("JWT_LEEWAY_SECS"), "{err}");
    }
}
