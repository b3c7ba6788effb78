"""``nnconsole dataset create``: what to convert (``sources``), one image shaped to W x H (``shaping``; the
'padding' fit computed without making the padded image in ``padded_resize``), every image converted on every
core (``convert``) and the dataset written all or nothing (``writer``; an existing one replaced by one
folder swap in ``swap``).
"""
