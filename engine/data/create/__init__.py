"""``nnconsole dataset create``: what to convert (``sources``), one image shaped to W x H (``shaping``), every
image converted on every core (``convert``) and the dataset written all or nothing (``writer``).
"""
