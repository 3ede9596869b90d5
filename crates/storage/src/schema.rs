//! Table definitions shared by both backends (UUIDs as text, timestamps as UTC `TIMESTAMP`).

diesel::table! {
    tenants (tenant_id) {
        tenant_id -> Text,
        name -> Text,
        wrapped_data_key -> Binary,
        created_at -> Timestamp,
        wrapped_index_keys -> Nullable<Binary>,
    }
}

diesel::table! {
    tenant_data_keys (tenant_id, version) {
        tenant_id -> Text,
        version -> Integer,
        wrapped_key -> Binary,
        created_at -> Timestamp,
    }
}

diesel::table! {
    data_key_jobs (tenant_id) {
        tenant_id -> Text,
        target_version -> Integer,
        stage -> Text,
        cursor -> Text,
        rows_done -> BigInt,
        started_at -> Timestamp,
        updated_at -> Timestamp,
        finished_at -> Nullable<Timestamp>,
        lease_owner -> Nullable<Text>,
        lease_until -> Nullable<Timestamp>,
    }
}

diesel::table! {
    applications (tenant_id, id) {
        tenant_id -> Text,
        id -> Text,
        name -> Text,
        app_type -> Text,
        permissions -> Text,
        rules -> Text,
        created_by -> Text,
        created_at -> Timestamp,
        modified_by -> Text,
        modified_at -> Timestamp,
        expires_at -> Nullable<Timestamp>,
        allowed_origins -> Text,
    }
}

diesel::table! {
    /// The keys of applications, each stored only as its SHA-256.
    application_keys (tenant_id, id) {
        tenant_id -> Text,
        application_id -> Text,
        id -> Text,
        key_hash -> Binary,
        created_by -> Text,
        created_at -> Timestamp,
    }
}

diesel::allow_tables_to_appear_in_same_query!(applications, application_keys);

diesel::table! {
    tokens (tenant_id, id) {
        tenant_id -> Text,
        id -> Text,
        token_type -> Text,
        container -> Text,
        metadata -> Text,
        data_ciphertext -> Binary,
        created_by -> Text,
        created_at -> Timestamp,
        modified_by -> Text,
        modified_at -> Timestamp,
        expires_at -> Nullable<Timestamp>,
        fingerprint -> Text,
        destinations -> Nullable<Text>,
        search_indexes -> Nullable<Text>,
        fingerprint_expression -> Nullable<Text>,
        holds_cvc -> Bool,
        mask_ciphertext -> Nullable<Binary>,
    }
}

diesel::table! {
    token_search_index (tenant_id, hash, container, token_id) {
        tenant_id -> Text,
        hash -> Binary,
        container -> Text,
        token_id -> Text,
    }
}

diesel::table! {
    token_metadata (tenant_id, token_id, key) {
        tenant_id -> Text,
        token_id -> Text,
        key -> Text,
        value -> Text,
        created_at -> Nullable<Timestamp>,
    }
}

diesel::allow_tables_to_appear_in_same_query!(tokens, token_metadata);
diesel::allow_tables_to_appear_in_same_query!(tokens, token_search_index);
diesel::allow_tables_to_appear_in_same_query!(token_metadata, token_search_index);

diesel::table! {
    token_associations (tenant_id, parent_id, child_id) {
        tenant_id -> Text,
        parent_id -> Text,
        child_id -> Text,
        child_created_at -> Timestamp,
        child_type -> Text,
        created_at -> Timestamp,
    }
}

diesel::allow_tables_to_appear_in_same_query!(tokens, token_associations);
diesel::allow_tables_to_appear_in_same_query!(token_metadata, token_associations);

diesel::table! {
    proxies (tenant_id, id) {
        tenant_id -> Text,
        id -> Text,
        name -> Text,
        name_search -> Text,
        destination_url -> Text,
        application_id -> Nullable<Text>,
        configuration -> Nullable<Binary>,
        require_auth -> Bool,
        created_by -> Text,
        created_at -> Timestamp,
        modified_by -> Text,
        modified_at -> Timestamp,
        key_lookup -> Nullable<Binary>,
        key_sealed -> Nullable<Binary>,
        request_transform_sealed -> Nullable<Binary>,
        response_transform_sealed -> Nullable<Binary>,
    }
}

diesel::table! {
    /// Clear secrets of proxies written before sealing, until start-up seals them.
    proxies_unsealed (tenant_id, id) {
        tenant_id -> Text,
        id -> Text,
        proxy_key -> Text,
        request_transform -> Nullable<Text>,
        response_transform -> Nullable<Text>,
    }
}

diesel::table! {
    vault_keys (name) {
        name -> Text,
        wrapped_key -> Binary,
    }
}

diesel::table! {
    idempotency_keys (tenant_id, application_id, idempotency_key) {
        tenant_id -> Text,
        application_id -> Text,
        idempotency_key -> Text,
        request_hash -> Binary,
        response_sealed -> Nullable<Binary>,
        created_at -> Timestamp,
    }
}

diesel::table! {
    console_sessions (id_hash) {
        id_hash -> Binary,
        tenant_id -> Text,
        application_id -> Text,
        key_hash -> Binary,
        key_sealed -> Binary,
        created_at -> Timestamp,
        last_seen_at -> Timestamp,
    }
}

diesel::table! {
    audit_events (tenant_id, seq) {
        tenant_id -> Text,
        seq -> BigInt,
        event_id -> Text,
        occurred_at -> Timestamp,
        action -> Text,
        outcome -> Text,
        actor -> Text,
        resource_ids -> Text,
        proxy_id -> Nullable<Text>,
        request_id -> Nullable<Text>,
        reason -> Nullable<Text>,
        prev_hash -> Binary,
        hash -> Binary,
    }
}

diesel::table! {
    audit_blocks (tenant_id, first_seq) {
        tenant_id -> Text,
        first_seq -> BigInt,
        last_seq -> BigInt,
        earliest_at -> Timestamp,
        latest_at -> Timestamp,
        prev_hash -> Binary,
        hashes -> Binary,
        events -> Binary,
        encoding -> SmallInt,
    }
}

diesel::table! {
    audit_chains (tenant_id) {
        tenant_id -> Text,
        last_seq -> BigInt,
        last_hash -> Binary,
        last_event_id -> Nullable<Text>,
        pruned_seq -> BigInt,
        pruned_hash -> Binary,
    }
}

diesel::table! {
    webhooks (tenant_id, id) {
        tenant_id -> Text,
        id -> Text,
        slot -> Integer,
        name -> Text,
        url -> Text,
        notify_email -> Nullable<Text>,
        events -> Text,
        status -> Text,
        created_by -> Text,
        created_at -> Timestamp,
        modified_by -> Nullable<Text>,
        modified_at -> Nullable<Timestamp>,
        cursor_seq -> BigInt,
        cursor_hash -> Binary,
        cursor_sub -> Integer,
        failing_since -> Nullable<Timestamp>,
        attempts -> Integer,
        next_attempt_at -> Nullable<Timestamp>,
        last_error -> Nullable<Text>,
        last_delivered_at -> Nullable<Timestamp>,
        disabled_at -> Nullable<Timestamp>,
        lease_owner -> Nullable<Text>,
        lease_until -> Nullable<Timestamp>,
    }
}

diesel::table! {
    webhook_signing_keys (version) {
        version -> Integer,
        public_pem -> Text,
        created_at -> Timestamp,
        activates_at -> Timestamp,
    }
}
