-- +goose Up
-- A revision's content becomes the rule domain's own format 1: the
-- envelope, and the kind's fields as the rules table's spec keeps them,
-- instead of the rule as the API showed it. Rollback then reads a version
-- back without the API's decoder. The API's fields besides the envelope
-- are exactly the spec's, so the spec is the content without the envelope.
UPDATE rule_revisions SET content = json_object(
  'format', 1,
  'id', json(content -> '$.id'),
  'name', content ->> '$.name',
  'kind', content ->> '$.kind',
  'resource', content ->> '$.resource',
  'enabled', json(content -> '$.enabled'),
  'mode', content ->> '$.mode',
  'description', coalesce(content ->> '$.description', ''),
  'spec', json_remove(content, '$.id', '$.name', '$.kind', '$.resource', '$.enabled',
    '$.mode', '$.description', '$.version', '$.createdAt', '$.updatedAt'),
  'version', json(content -> '$.version'),
  'createdAt', content ->> '$.createdAt',
  'updatedAt', content ->> '$.updatedAt'
) WHERE json_type(content, '$.format') IS NULL;

-- +goose Down
UPDATE rule_revisions SET content = json_patch(json_object(
  'id', json(content -> '$.id'),
  'name', content ->> '$.name',
  'kind', content ->> '$.kind',
  'resource', content ->> '$.resource',
  'enabled', json(content -> '$.enabled'),
  'mode', content ->> '$.mode',
  'description', content ->> '$.description',
  'version', json(content -> '$.version'),
  'createdAt', content ->> '$.createdAt',
  'updatedAt', content ->> '$.updatedAt'
), content -> '$.spec') WHERE json_type(content, '$.format') = 'integer';
