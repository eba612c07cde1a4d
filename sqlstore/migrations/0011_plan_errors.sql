-- The planner's last failure for a group (a 411 No such group, a refused
-- login, a failed date search), shown by status and GET /v1/fleet until a
-- poll of the group succeeds. A row goes with its plan.
CREATE TABLE plan_errors (
    group_id BIGINT PRIMARY KEY REFERENCES plans (group_id) ON DELETE CASCADE,
    message  TEXT NOT NULL,
    at_us    BIGINT NOT NULL
);
