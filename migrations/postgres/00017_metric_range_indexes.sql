-- +goose Up
-- Each metric table by minute, then resource, covering the columns the
-- rankings sum (GET /api/v1/metrics/top: pass, block, error, and complete
-- with rt_sum_ms for avgRt): a part of a ranking's range is then one
-- index-only range scan over every resource's rows, where the primary key
-- (resource, minute) took a probe per resource and part. On the 10 M-row
-- seed a top-10 by block reads 30 to 50 times fewer pages
-- (docs/performance.md). The cost: about half the minute rows' size again,
-- and an index entry more for each row a flush writes. Building them takes
-- writes' lock for about a minute on 10 M minute rows.
CREATE INDEX metric_minutes_by_start ON metric_minutes (start_ms, resource_id)
    INCLUDE (pass, block, error, complete, rt_sum_ms);
CREATE INDEX metric_five_minutes_by_start ON metric_five_minutes (start_ms, resource_id)
    INCLUDE (pass, block, error, complete, rt_sum_ms);
CREATE INDEX metric_hours_by_start ON metric_hours (start_ms, resource_id)
    INCLUDE (pass, block, error, complete, rt_sum_ms);
CREATE INDEX metric_days_by_start ON metric_days (start_ms, resource_id)
    INCLUDE (pass, block, error, complete, rt_sum_ms);

-- +goose Down
DROP INDEX metric_days_by_start;
DROP INDEX metric_hours_by_start;
DROP INDEX metric_five_minutes_by_start;
DROP INDEX metric_minutes_by_start;
