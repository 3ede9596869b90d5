//! The statements on a chain's head row that every writer of a chain runs, as macros so that
//! one source serves both backends' connection types.
//!
//! A writer takes the head with a write as the chain's first statement (an `UPDATE` of the row
//! onto itself): PostgreSQL then holds that row's lock, SQLite its database write lock, until
//! commit, so two processes writing one chain take turns instead of both chaining after the
//! same event. Writers take heads in chain-key order, so two transactions spanning the same
//! chains cannot deadlock.

/// A chain's head row, created at genesis if the chain is new.
macro_rules! ensure_head {
    ($key:expr) => {
        diesel::insert_into($crate::schema::audit_chains::table)
            .values((
                $crate::schema::audit_chains::tenant_id.eq($key),
                $crate::schema::audit_chains::last_seq.eq(0),
                $crate::schema::audit_chains::last_hash.eq(tessera_audit::GENESIS.as_slice()),
                $crate::schema::audit_chains::pruned_seq.eq(0),
                $crate::schema::audit_chains::pruned_hash.eq(tessera_audit::GENESIS.as_slice()),
            ))
            .on_conflict_do_nothing()
    };
}

/// Takes the head's lock until commit.
macro_rules! lock_head {
    ($key:expr) => {
        diesel::update(
            $crate::schema::audit_chains::table
                .filter($crate::schema::audit_chains::tenant_id.eq($key)),
        )
        .set($crate::schema::audit_chains::last_seq.eq($crate::schema::audit_chains::last_seq))
    };
}

/// Reads the head.
macro_rules! read_head {
    ($key:expr) => {
        $crate::schema::audit_chains::table
            .filter($crate::schema::audit_chains::tenant_id.eq($key))
            .select(<$crate::audit::rows::HeadRow as diesel::SelectableHelper<
                _,
            >>::as_select())
    };
}

/// Writes the head back: where the chain ends and what retention removed.
macro_rules! write_head {
    ($key:expr, $head:expr) => {
        diesel::update(
            $crate::schema::audit_chains::table
                .filter($crate::schema::audit_chains::tenant_id.eq($key)),
        )
        .set((
            $crate::schema::audit_chains::last_seq.eq($head.last_seq),
            $crate::schema::audit_chains::last_hash.eq($head.last_hash.as_slice()),
            $crate::schema::audit_chains::last_event_id
                .eq($head.last_event_id.map(|id| id.to_string())),
            $crate::schema::audit_chains::pruned_seq.eq($head.pruned_seq),
            $crate::schema::audit_chains::pruned_hash.eq($head.pruned_hash.as_slice()),
        ))
    };
}
