#!/bin/bash
version_dirpath="/usr/local/Ascend/cann-8.5.0"
export ASCEND_TOOLKIT_HOME="$version_dirpath"
export ASCEND_HOME_PATH="$ASCEND_TOOLKIT_HOME"
