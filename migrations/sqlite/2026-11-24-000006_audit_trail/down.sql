UPDATE applications SET permissions = replace(permissions, ',"audit:read"', '');
DROP TABLE audit_chains;
DROP TABLE audit_events;
