"""Custom search attributes, so operators can filter Trellis runs in the Temporal Web UI."""

from temporalio.common import SearchAttributeKey

DEFINITION_ID = SearchAttributeKey.for_keyword("TrellisDefinitionId")
RUN_STATUS = SearchAttributeKey.for_keyword("TrellisRunStatus")
TRIGGER_SOURCE = SearchAttributeKey.for_keyword("TrellisTriggerSource")
PARENT_RUN_ID = SearchAttributeKey.for_keyword("TrellisParentRunId")

ALL = (DEFINITION_ID, RUN_STATUS, TRIGGER_SOURCE, PARENT_RUN_ID)
