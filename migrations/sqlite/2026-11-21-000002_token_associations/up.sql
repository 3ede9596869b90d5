-- Directed parent → child links between tokens of one tenant. The child's created_at is copied
-- in (tokens are immutable in that respect) so that "children of P" is one index range read in
-- page order; the child's type is copied too, so that the common type filter is answered
-- from the same index.
CREATE TABLE token_associations (
    tenant_id        TEXT NOT NULL,
    parent_id        TEXT NOT NULL,
    child_id         TEXT NOT NULL,
    child_created_at TIMESTAMP NOT NULL,
    child_type       TEXT NOT NULL,
    created_at       TIMESTAMP NOT NULL,
    PRIMARY KEY (tenant_id, parent_id, child_id),
    FOREIGN KEY (tenant_id, parent_id) REFERENCES tokens (tenant_id, id) ON DELETE CASCADE,
    FOREIGN KEY (tenant_id, child_id) REFERENCES tokens (tenant_id, id) ON DELETE CASCADE
);
CREATE INDEX token_associations_children
    ON token_associations (tenant_id, parent_id, child_created_at, child_id, child_type);
CREATE INDEX token_associations_parents ON token_associations (tenant_id, child_id);
