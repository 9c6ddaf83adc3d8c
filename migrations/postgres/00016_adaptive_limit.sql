-- +goose Up
-- As SQLite's 00016.
-- The least, greatest and latest limit of the resource's adaptive
-- concurrency rule in the row's span (docs/engine.md#adaptive-concurrency),
-- so that the console draws the limit over time; adaptive_limit_at_ms is
-- the start of the minute the latest is of, which a rollup row written out
-- of order keeps the latest by. The least is NULL and the others 0 for a
-- span without one, as in rows written before.
ALTER TABLE metric_minutes ADD COLUMN adaptive_limit_min BIGINT;
ALTER TABLE metric_minutes ADD COLUMN adaptive_limit_max BIGINT NOT NULL DEFAULT 0;
ALTER TABLE metric_minutes ADD COLUMN adaptive_limit_last BIGINT NOT NULL DEFAULT 0;
ALTER TABLE metric_minutes ADD COLUMN adaptive_limit_at_ms BIGINT NOT NULL DEFAULT 0;
ALTER TABLE metric_five_minutes ADD COLUMN adaptive_limit_min BIGINT;
ALTER TABLE metric_five_minutes ADD COLUMN adaptive_limit_max BIGINT NOT NULL DEFAULT 0;
ALTER TABLE metric_five_minutes ADD COLUMN adaptive_limit_last BIGINT NOT NULL DEFAULT 0;
ALTER TABLE metric_five_minutes ADD COLUMN adaptive_limit_at_ms BIGINT NOT NULL DEFAULT 0;
ALTER TABLE metric_hours ADD COLUMN adaptive_limit_min BIGINT;
ALTER TABLE metric_hours ADD COLUMN adaptive_limit_max BIGINT NOT NULL DEFAULT 0;
ALTER TABLE metric_hours ADD COLUMN adaptive_limit_last BIGINT NOT NULL DEFAULT 0;
ALTER TABLE metric_hours ADD COLUMN adaptive_limit_at_ms BIGINT NOT NULL DEFAULT 0;
ALTER TABLE metric_days ADD COLUMN adaptive_limit_min BIGINT;
ALTER TABLE metric_days ADD COLUMN adaptive_limit_max BIGINT NOT NULL DEFAULT 0;
ALTER TABLE metric_days ADD COLUMN adaptive_limit_last BIGINT NOT NULL DEFAULT 0;
ALTER TABLE metric_days ADD COLUMN adaptive_limit_at_ms BIGINT NOT NULL DEFAULT 0;
ALTER TABLE instance_minutes ADD COLUMN adaptive_limit_min BIGINT;
ALTER TABLE instance_minutes ADD COLUMN adaptive_limit_max BIGINT NOT NULL DEFAULT 0;
ALTER TABLE instance_minutes ADD COLUMN adaptive_limit_last BIGINT NOT NULL DEFAULT 0;
ALTER TABLE instance_minutes ADD COLUMN adaptive_limit_at_ms BIGINT NOT NULL DEFAULT 0;

-- +goose Down
ALTER TABLE instance_minutes DROP COLUMN adaptive_limit_at_ms;
ALTER TABLE instance_minutes DROP COLUMN adaptive_limit_last;
ALTER TABLE instance_minutes DROP COLUMN adaptive_limit_max;
ALTER TABLE instance_minutes DROP COLUMN adaptive_limit_min;
ALTER TABLE metric_days DROP COLUMN adaptive_limit_at_ms;
ALTER TABLE metric_days DROP COLUMN adaptive_limit_last;
ALTER TABLE metric_days DROP COLUMN adaptive_limit_max;
ALTER TABLE metric_days DROP COLUMN adaptive_limit_min;
ALTER TABLE metric_hours DROP COLUMN adaptive_limit_at_ms;
ALTER TABLE metric_hours DROP COLUMN adaptive_limit_last;
ALTER TABLE metric_hours DROP COLUMN adaptive_limit_max;
ALTER TABLE metric_hours DROP COLUMN adaptive_limit_min;
ALTER TABLE metric_five_minutes DROP COLUMN adaptive_limit_at_ms;
ALTER TABLE metric_five_minutes DROP COLUMN adaptive_limit_last;
ALTER TABLE metric_five_minutes DROP COLUMN adaptive_limit_max;
ALTER TABLE metric_five_minutes DROP COLUMN adaptive_limit_min;
ALTER TABLE metric_minutes DROP COLUMN adaptive_limit_at_ms;
ALTER TABLE metric_minutes DROP COLUMN adaptive_limit_last;
ALTER TABLE metric_minutes DROP COLUMN adaptive_limit_max;
ALTER TABLE metric_minutes DROP COLUMN adaptive_limit_min;
