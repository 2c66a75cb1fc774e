//! Who is calling: API keys (stored as SHA-256 hashes, compared in constant time), OIDC/Cognito
//! JWTs (RS256/ES256 against a JWKS), the IAM caller of an `AWS_IAM` Function URL, or nobody
//! (`none`). A refusal says nothing that helps an attacker.

use http::HeaderMap;
use jsonwebtoken::jwk::{AlgorithmParameters, EllipticCurve, JwkSet};
use jsonwebtoken::{Algorithm, DecodingKey, Validation};
use serde::Deserialize;
use sha2::{Digest, Sha256};
use std::collections::HashMap;
use subtle::ConstantTimeEq;

/// Who is calling, once authenticated: the owner of the threads, memories and usage it makes.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Principal(String);

impl Principal {
    /// The principal named `id`: an API key's name, a JWT's `sub`, an IAM ARN.
    pub fn new(id: impl Into<String>) -> Self {
        Self(id.into())
    }

    /// The caller when authentication is off (`AUTH_MODE=none`).
    pub fn anonymous() -> Self {
        Self("anonymous".to_owned())
    }

    /// The principal's name, as threads record their owner.
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

/// The IAM identity Lambda puts in the request context of an `AWS_IAM` Function URL.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct IamCaller(pub String);

#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum AuthConfigError {
    #[error("API key entry {0} must be principal=<64 hex digits of SHA-256>")]
    BadKeyEntry(usize),
    #[error("no API keys are configured")]
    NoKeys,
    #[error("the JWKS is not valid JSON: {0}")]
    BadJwks(String),
    #[error("the JWKS holds no RS256 or ES256 signing key")]
    NoUsableKey,
}

/// The caller is not who they claim, or did not say.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[error("missing or invalid credentials")]
pub(crate) struct Unauthorized;

pub struct ApiKeys {
    keys: Vec<(Principal, [u8; 32])>,
}

impl ApiKeys {
    /// `alice=<sha256 hex>,bob=<sha256 hex>` (newlines work too), or a JSON object
    /// `{"alice": "<sha256 hex>"}` as a Secrets Manager secret naturally holds it.
    pub(crate) fn parse(spec: &str) -> Result<Self, AuthConfigError> {
        let pairs: Vec<(String, String)> =
            match serde_json::from_str::<HashMap<String, String>>(spec) {
                Ok(map) => map.into_iter().collect(),
                Err(_) => spec
                    .split([',', '\n'])
                    .map(str::trim)
                    .filter(|entry| !entry.is_empty())
                    .enumerate()
                    .map(|(index, entry)| {
                        entry
                            .split_once('=')
                            .map(|(name, hash)| (name.trim().to_owned(), hash.trim().to_owned()))
                            .ok_or(AuthConfigError::BadKeyEntry(index))
                    })
                    .collect::<Result<_, _>>()?,
            };
        let mut keys = Vec::with_capacity(pairs.len());
        for (index, (name, hash)) in pairs.into_iter().enumerate() {
            let digest = decode_hex(&hash).ok_or(AuthConfigError::BadKeyEntry(index))?;
            if name.is_empty() {
                return Err(AuthConfigError::BadKeyEntry(index));
            }
            keys.push((Principal::new(name), digest));
        }
        if keys.is_empty() {
            return Err(AuthConfigError::NoKeys);
        }
        Ok(Self { keys })
    }

    pub fn merge(mut self, other: ApiKeys) -> Self {
        self.keys.extend(other.keys);
        self
    }

    /// Hashes the presented key and compares it with every configured hash, without stopping at
    /// a match, so timing reveals neither the key nor which principal it belongs to.
    fn verify(&self, presented: &str) -> Option<Principal> {
        let digest: [u8; 32] = Sha256::digest(presented.as_bytes()).into();
        let mut found = None;
        for (principal, hash) in &self.keys {
            if bool::from(digest.ct_eq(hash)) {
                found = Some(principal.clone());
            }
        }
        found
    }
}

#[cfg(any(test, feature = "test-utils"))]
/// The SHA-256 hex digest to configure for an API key.
pub fn hash_api_key(key: &str) -> String {
    Sha256::digest(key.as_bytes())
        .iter()
        .map(|byte| format!("{byte:02x}"))
        .collect()
}

fn decode_hex(hex: &str) -> Option<[u8; 32]> {
    if hex.len() != 64 {
        return None;
    }
    let mut out = [0u8; 32];
    for (index, byte) in out.iter_mut().enumerate() {
        *byte = u8::from_str_radix(hex.get(index * 2..index * 2 + 2)?, 16).ok()?;
    }
    Some(out)
}

pub struct JwtVerifier {
    keys: Vec<(Option<String>, Algorithm, DecodingKey)>,
    validation: Validation,
}

#[derive(Deserialize)]
struct Claims {
    sub: String,
}

impl JwtVerifier {
    pub(crate) fn from_jwks(
        jwks: &str,
        issuer: &str,
        audience: &str,
        leeway_secs: u64,
    ) -> Result<Self, AuthConfigError> {
        let set: JwkSet =
            serde_json::from_str(jwks).map_err(|err| AuthConfigError::BadJwks(err.to_string()))?;
        let keys: Vec<_> = set
            .keys
            .iter()
            .filter_map(|jwk| {
                let algorithm = match &jwk.algorithm {
                    AlgorithmParameters::RSA(_) => Algorithm::RS256,
                    AlgorithmParameters::EllipticCurve(ec) if ec.curve == EllipticCurve::P256 => {
                        Algorithm::ES256
                    }
                    _ => return None,
                };
                let key = DecodingKey::from_jwk(jwk).ok()?;
                Some((jwk.common.key_id.clone(), algorithm, key))
            })
            .collect();
        if keys.is_empty() {
            return Err(AuthConfigError::NoUsableKey);
        }
        let mut validation = Validation::new(Algorithm::RS256);
        validation.set_issuer(&[issuer]);
        validation.set_audience(&[audience]);
        validation.leeway = leeway_secs;
        validation.validate_nbf = true;
        validation.set_required_spec_claims(&["exp", "iss", "aud", "sub"]);
        Ok(Self { keys, validation })
    }

    fn verify(&self, token: &str) -> Option<Principal> {
        let header = jsonwebtoken::decode_header(token).ok()?;
        // The key is chosen by `kid` and must match the token's algorithm: a token cannot pick
        // a weaker algorithm or another key type for itself.
        let (_, algorithm, key) = self.keys.iter().find(|(kid, algorithm, _)| {
            *algorithm == header.alg
                && (header.kid.is_none() || kid.as_deref() == header.kid.as_deref())
        })?;
        let mut validation = self.validation.clone();
        validation.algorithms = vec![*algorithm];
        let data = jsonwebtoken::decode::<Claims>(token, key, &validation).ok()?;
        (!data.claims.sub.is_empty()).then(|| Principal::new(data.claims.sub))
    }
}

pub enum Authenticator {
    /// Everyone is `anonymous`: local development only.
    None,
    ApiKeys(ApiKeys),
    Jwt(Box<JwtVerifier>),
    /// The Function URL (AuthType AWS_IAM) already checked the SigV4 signature.
    Iam,
}

fn bearer(headers: &HeaderMap) -> Option<&str> {
    let value = headers.get(http::header::AUTHORIZATION)?.to_str().ok()?;
    let (scheme, token) = value.split_once(' ')?;
    scheme
        .eq_ignore_ascii_case("bearer")
        .then(|| token.trim())
        .filter(|token| !token.is_empty())
}

impl Authenticator {
    pub(crate) fn authenticate(
        &self,
        headers: &HeaderMap,
        iam_caller: Option<&IamCaller>,
    ) -> Result<Principal, Unauthorized> {
        match self {
            Authenticator::None => Ok(Principal::anonymous()),
            Authenticator::ApiKeys(keys) => bearer(headers)
                .and_then(|key| keys.verify(key))
                .ok_or(Unauthorized),
            Authenticator::Jwt(verifier) => bearer(headers)
                .and_then(|token| verifier.verify(token))
                .ok_or(Unauthorized),
            Authenticator::Iam => iam_caller
                .map(|caller| Principal::new(caller.0.clone()))
                .ok_or(Unauthorized),
        }
    }

    pub(crate) fn mode(&self) -> &'static str {
        match self {
            Authenticator::None => "none",
            Authenticator::ApiKeys(_) => "api-key",
            Authenticator::Jwt(_) => "jwt",
            Authenticator::Iam => "iam",
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn headers(authorization: &str) -> HeaderMap {
        let mut headers = HeaderMap::new();
        headers.insert(http::header::AUTHORIZATION, authorization.parse().unwrap());
        headers
    }

    #[test]
    fn api_keys_match_by_hash_and_name_their_principal() {
        let spec = format!(
            "alice={},bob={}",
            hash_api_key("key-a"),
            hash_api_key("key-b")
        );
        let auth = Authenticator::ApiKeys(ApiKeys::parse(&spec).unwrap());
        assert_eq!(
            auth.authenticate(&headers("Bearer key-b"), None),
            Ok(Principal::new("bob"))
        );
        assert_eq!(
            auth.authenticate(&headers("bearer key-a"), None),
            Ok(Principal::new("alice"))
        );
        assert_eq!(
            auth.authenticate(&headers("Bearer key-c"), None),
            Err(Unauthorized)
        );
        assert_eq!(
            auth.authenticate(&headers("Basic key-a"), None),
            Err(Unauthorized)
        );
        assert_eq!(
            auth.authenticate(&HeaderMap::new(), None),
            Err(Unauthorized)
        );
    }

    #[test]
    fn api_key_specs_in_json_and_mistakes() {
        let json = format!("{{\"carol\": \"{}\"}}", hash_api_key("k"));
        assert!(ApiKeys::parse(&json).is_ok());
        assert_eq!(
            ApiKeys::parse("alice=nothex").err(),
            Some(AuthConfigError::BadKeyEntry(0))
        );
        assert_eq!(
            ApiKeys::parse("plainkey").err(),
            Some(AuthConfigError::BadKeyEntry(0))
        );
        assert_eq!(ApiKeys::parse("").err(), Some(AuthConfigError::NoKeys));
    }

    #[test]
    fn iam_needs_the_request_context_caller() {
        let caller = IamCaller("arn:aws:iam::123456789012:user/alice".into());
        assert_eq!(
            Authenticator::Iam.authenticate(&HeaderMap::new(), Some(&caller)),
            Ok(Principal::new(caller.0.clone()))
        );
        assert_eq!(
            Authenticator::Iam.authenticate(&HeaderMap::new(), None),
            Err(Unauthorized)
        );
    }
}
