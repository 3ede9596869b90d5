//! The KMS custody against a real KMS endpoint (moto's server): wrapping round-trips; a
//! wrapping opens only for the tenant and purpose it was made for, and only with its key;
//! another custody's wrapping is not this one's; a key pending deletion is refused at start;
//! an unreachable KMS is refused at start and answers "unavailable" (503) afterwards, never
//! "wrong key".

#![allow(clippy::expect_used, clippy::unwrap_used)]

use tessera_custody_aws_kms::{AwsKmsCustody, AwsKmsError};
use tessera_domain::{
    crypto::CryptoError,
    custody::{KeyCustody, WrapPurpose},
    ids::TenantId,
};
use tessera_testkit::moto::Moto;

async fn custody(moto: &Moto, key: &str) -> Result<AwsKmsCustody, AwsKmsError> {
    AwsKmsCustody::from_sdk_config(&moto.sdk_config().await, &moto.config(key)).await
}

#[tokio::test]
async fn a_kms_key_wraps_and_binds_each_wrapping_to_its_tenant_purpose_and_key() {
    let Some(moto) = Moto::start() else {
        return;
    };
    let (key, other_key) = (moto.create_key().await, moto.create_key().await);
    let kms = custody(&moto, &key).await.expect("open");
    let other = custody(&moto, &other_key)
        .await
        .expect("open the other key");
    let (a, b) = (TenantId::new(), TenantId::new());
    let plain = [7u8; 32];

    let wrapped = kms
        .wrap(WrapPurpose::DataKey(a), &plain)
        .await
        .expect("wrap");
    assert_eq!(
        wrapped[0], 3,
        "a KMS wrapping starts with its custody's byte"
    );
    assert!(
        !wrapped.windows(32).any(|w| w == plain),
        "the key is not in the wrapping"
    );
    let opened = kms
        .unwrap(WrapPurpose::DataKey(a), &wrapped)
        .await
        .expect("unwrap");
    assert_eq!(opened.as_slice(), &plain);

    // Another tenant, another purpose, another key: KMS refuses; the vault sees a refused
    // ciphertext, not an outage.
    for (custody, purpose) in [
        (&kms, WrapPurpose::DataKey(b)),
        (&kms, WrapPurpose::VaultKey(&a.to_string())),
        (&other, WrapPurpose::DataKey(a)),
    ] {
        let refused = custody.unwrap(purpose, &wrapped).await;
        assert!(
            matches!(refused, Err(CryptoError::Authentication)),
            "{purpose:?}: {refused:?}"
        );
    }
    // A wrapping of another custody (a file key's starts with 1), and a bare custody byte.
    let mut foreign = wrapped.clone();
    foreign[0] = 1;
    assert!(matches!(
        kms.unwrap(WrapPurpose::DataKey(a), &foreign).await,
        Err(CryptoError::Authentication)
    ));
    // No id length; an id longer than what follows; an id and no ciphertext.
    let header = &wrapped[..2 + usize::from(wrapped[1])];
    for short in [&[3][..], &[3, 40, b'a'], header] {
        assert!(
            matches!(
                kms.unwrap(WrapPurpose::DataKey(a), short).await,
                Err(CryptoError::Malformed)
            ),
            "{short:?}"
        );
    }
    // A flipped bit in KMS's ciphertext.
    let mut tampered = wrapped.clone();
    let last = tampered.len() - 1;
    tampered[last] ^= 1;
    assert!(kms
        .unwrap(WrapPurpose::DataKey(a), &tampered)
        .await
        .is_err());
}

#[tokio::test]
async fn a_key_pending_deletion_or_an_unknown_key_is_refused_at_start() {
    let Some(moto) = Moto::start() else {
        return;
    };
    let key = moto.create_key().await;
    let unknown = custody(&moto, "0a0b0c0d-1111-2222-3333-444455556666").await;
    assert!(
        matches!(&unknown, Err(AwsKmsError::Refused { code, .. }) if code == "NotFoundException"),
        "{unknown:?}"
    );
    let shown = unknown.expect_err("refused").to_string();
    assert!(
        !shown.contains("0a0b0c0d"),
        "no key id in the error: {shown}"
    );
    moto.client()
        .await
        .schedule_key_deletion()
        .key_id(&key)
        .pending_window_in_days(7)
        .send()
        .await
        .expect("ScheduleKeyDeletion");
    let pending = custody(&moto, &key).await;
    assert!(
        matches!(&pending, Err(AwsKmsError::Unusable { found }) if found.contains("PendingDeletion")),
        "{pending:?}"
    );
    assert!(matches!(custody(&moto, " ").await, Err(AwsKmsError::NoKey)));
}

#[tokio::test]
async fn an_unreachable_kms_is_refused_at_start_and_unavailable_after() {
    let Some(moto) = Moto::start() else {
        return;
    };
    let key = moto.create_key().await;
    let kms = custody(&moto, &key).await.expect("open");
    let tenant = TenantId::new();
    let wrapped = kms
        .wrap(WrapPurpose::DataKey(tenant), &[1u8; 32])
        .await
        .expect("wrap");
    moto.stop();
    for result in [
        kms.unwrap(WrapPurpose::DataKey(tenant), &wrapped)
            .await
            .map(|_| ()),
        kms.wrap(WrapPurpose::DataKey(tenant), &[1u8; 32])
            .await
            .map(|_| ()),
    ] {
        assert!(
            matches!(&result, Err(CryptoError::CustodyUnavailable(m)) if m.contains("AWS KMS")),
            "{result:?}"
        );
    }
    let refused = custody(&moto, &key).await;
    assert!(
        matches!(refused, Err(AwsKmsError::Unreachable(_))),
        "{refused:?}"
    );
}
