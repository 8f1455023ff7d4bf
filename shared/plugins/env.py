"""env: the pod's index in its task as VK_TASK_INDEX and VC_TASK_INDEX."""

from __future__ import annotations

from shared.plugins.descriptor import PluginDescriptor

DESCRIPTOR = PluginDescriptor(name="env")
