-- +goose Up
-- As SQLite's 00015.
-- The most calls, passed or blocked, that one engine saw in one second of
-- the row's span, so that a rule's impact estimate (docs/impact.md) sees
-- the bursts a minute's sum hides. Rows written before keep 0: no burst
-- known.
ALTER TABLE metric_minutes ADD COLUMN busiest_second BIGINT NOT NULL DEFAULT 0;
ALTER TABLE metric_five_minutes ADD COLUMN busiest_second BIGINT NOT NULL DEFAULT 0;
ALTER TABLE metric_hours ADD COLUMN busiest_second BIGINT NOT NULL DEFAULT 0;
ALTER TABLE metric_days ADD COLUMN busiest_second BIGINT NOT NULL DEFAULT 0;
ALTER TABLE instance_minutes ADD COLUMN busiest_second BIGINT NOT NULL DEFAULT 0;

-- +goose Down
ALTER TABLE instance_minutes DROP COLUMN busiest_second;
ALTER TABLE metric_days DROP COLUMN busiest_second;
ALTER TABLE metric_hours DROP COLUMN busiest_second;
ALTER TABLE metric_five_minutes DROP COLUMN busiest_second;
ALTER TABLE metric_minutes DROP COLUMN busiest_second;
